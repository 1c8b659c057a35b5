"""The script commands, one module each (`*_command`): `cascade runs`, `cascade run ...`,
`cascade results`, `cascade traces`, `cascade configs`, which talk to the server through the UI's
async client (`cascade_tui.connection.client`) and read the same settings as `cascade tui` (flags,
CASCADE_URL / CASCADE_TOKEN, the config file); and `cascade upload` / `cascade timeline import`,
which work on a trace directory and the bucket, with the rules of the core (cascade_core).

None imports Textual (an import contract). `output`, `views` and `result_views` are pure: what a
command prints is built and tested without a server; a run's wording is `cascade_tui.views.run_rows`,
the same as the UI's.
"""
