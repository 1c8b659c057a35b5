"""What a failure reading one trace means for it: TraceReadError fails that trace with a
one-line reason; TraceRetryLater leaves it for the next scan. Either way the scan goes on."""

from __future__ import annotations

from .postprocess import NO_SPACE_ERRNOS


class TraceReadError(Exception):
    """One trace cannot be read for a reason of its own (a bad object, a hostile metadata.json):
    that trace fails with this one-line message; the scan goes on with the others."""


class TraceRetryLater(Exception):
    """One trace cannot be read for now (the endpoint is unreachable, the disk is full): it is
    left as it is and read again on the next scan; the scan goes on with the others."""


def short(rel: str, limit: int = 80) -> str:
    return rel if len(rel) <= limit else rel[: limit - 3] + "..."


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def mirror_error(rel: str, exc: Exception) -> Exception:
    """What a failed download of object `rel` means for its trace: TraceRetryLater for passing
    trouble (connection, server busy, disk full), TraceReadError for trouble with the object."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    what = f"could not mirror {short(rel)}"
    if isinstance(exc, (ConnectionError, HTTPClientError)):
        return TraceRetryLater(f"{what}: {one_line(exc)}")
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "?")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if status >= 500 or code in ("SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError"):
            return TraceRetryLater(f"{what}: S3 error {code}")
        return TraceReadError(f"{what}: S3 error {code}")
    if isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS:
        return TraceRetryLater(f"{what}: {exc.strerror}")
    if isinstance(exc, OSError) and exc.strerror:
        return TraceReadError(f"{what}: {exc.strerror}")
    return TraceReadError(f"{what}: {type(exc).__name__}: {one_line(exc)}")
