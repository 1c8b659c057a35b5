"""The core that the server, the worker and the client side (the UI and the script commands) all
stand on, as peers: the contract and the pure rules and readers every one of them uses.

- `models`: every API type, `SIM_TRANSITIONS`, `run_state()`: the contract (one module per
  aggregate; `cascade_core.models` re-exports them all).
- `comparison`, `accuracy`: the per-kernel comparison, MAPE and accuracy maths.
- `timeline/`: the step-timeline model (`cascade simulate` / `cascade compare`).
- `trace_layout`: where a trace's keys and timing files are.
- `upload_rules`: the trace ids and layouts the server accepts (checked by `cascade upload` first).
- `trace_inputs`, `trace_kernels`: the kernels a trace holds (`kernelslist.g`, stats files).
- `simulator_layout`: where an installed Accel-Sim lives (the worker installs it, the server and
  the worker read it).
- `s3_endpoint`, `trace_upload`: the bucket client and the uploader (`cascade upload`, the demo
  data `cascade serve` seeds); only `cascade upload` loads them on the client side.
- `demangle`: readable kernel names.
- `cli_usage`, `setting_errors`: one wording for usage errors and wrong settings.
- `packaged`: where the samples shipped with Cascade are (`sample_data/`).

It imports none of the three packages above it (pyproject's import contracts), and loads neither
aiohttp nor aiosqlite, so a sim host or a laptop never loads the database or the web server.
"""
