"""Trace ingestion: traces arrive as objects under `accelsim-traces/<trace_id>/` in an S3 bucket
(`shared.trace_layout` names the keys).

- `s3`: connection details and the boto3 client every part uses.
- `embedded_s3`: the default S3 endpoint, `rclone serve s3` over the data dir.
- `metadata`, `completeness`, `kernels`, `grouping`: pure logic (no I/O).
- `postprocess`: turns raw tracer output into `.traceg` files (run in its own process).
- `scanner` / `ingest`: the 2 s scan that mirrors, registers and processes traces.
- `uploader`: uploads a local trace directory (used by `cascade upload` and the demo data).
"""
