"""Log ingest, a service: chunk ordering, the parked chunks, parsing, progress and the live
events built from them. Storage (`storage/logs.py`) only stores what it decides."""
