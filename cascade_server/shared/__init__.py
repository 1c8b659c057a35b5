"""The shared room: what the server, the worker and the UI all use, and nothing that does I/O
beyond reading a file.

- `models`: every API type, `SIM_TRANSITIONS`, `run_state()`: the contract.
- `comparison`: the per-kernel comparison and MAPE maths.
- `timeline/`: the step-timeline model (`cascade simulate` / `cascade compare`).
- `trace_layout`: where a trace's keys and timing files are.
- `demangle`: readable kernel names.
- `cli_usage`, `setting_errors`: one wording for usage errors and wrong settings.
- `packaged`: where the samples shipped with Cascade are.

The worker and the UI may import only this room of `cascade_server`, and it imports nothing else
of the server (pyproject's import contracts), so a sim host or a laptop never loads the database,
the launchers or the S3 client.
"""
