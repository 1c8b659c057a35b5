"""The shared room: what the server, the worker and the client side (the UI and the script
commands) all use.

- `models`: every API type, `SIM_TRANSITIONS`, `run_state()`: the contract.
- `comparison`: the per-kernel comparison and MAPE maths.
- `timeline/`: the step-timeline model (`cascade simulate` / `cascade compare`).
- `trace_layout`: where a trace's keys and timing files are.
- `upload_rules`: the trace ids and layouts the server accepts (checked by `cascade upload` first).
- `trace_inputs`, `trace_kernels`: the kernels a trace holds (`kernelslist.g`, stats files).
- `s3_endpoint`, `trace_upload`: the bucket client and the uploader (`cascade upload`, the demo
  data `cascade serve` seeds); only `cascade upload` loads them on the client side.
- `demangle`: readable kernel names.
- `cli_usage`, `setting_errors`: one wording for usage errors and wrong settings.
- `packaged`: where the samples shipped with Cascade are.

The worker and the UI may import only this room of `cascade_server`, and it imports nothing else
of the server (pyproject's import contracts), so a sim host or a laptop never loads the database,
the launchers or (but for `cascade upload`) the S3 client.
"""
