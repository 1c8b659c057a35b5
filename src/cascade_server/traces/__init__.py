"""Trace ingestion: traces arrive as objects under `accelsim-traces/<trace_id>/` in an S3 bucket
(`cascade_core.trace_layout` names the keys; the bucket client, the uploader, the upload rules and
the kernel list are in the core too, since `cascade upload` and `cascade timeline import` use them).

- `embedded_s3`: the default S3 endpoint, `rclone serve s3` over the data dir.
- `metadata`, `completeness`, `grouping`: pure logic (no I/O).
- `postprocess`: turns raw tracer output into `.traceg` files (run in its own process).
- `scanner` / `ingest`: the 2 s scan that mirrors, registers and processes traces.
"""
