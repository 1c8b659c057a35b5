"""Deleting a trace everywhere, resumably: its bucket objects (so no scan brings it back and its id
can be uploaded again), its row (the runs keep its record), then its mirror and scan book (so a new
upload under the id starts from no file of the old one). `reserve_trace_delete` journals the delete
before any of it (and marks it under way in this process); `finish_trace_delete` does every step
idempotently and then ends the journal entry, so a delete a crash interrupted is finished by `resume_trace_deletes` on startup and on
every scan."""

from __future__ import annotations

import asyncio
import logging
import shutil
from typing import TYPE_CHECKING, Protocol

from cascade_core.upload_rules import trace_id_problem

from .scan_errors import one_line

if TYPE_CHECKING:
    from ..settings import Settings
    from ..storage import Store

log = logging.getLogger(__name__)


class TraceScanner(Protocol):
    """What a delete asks of the scanner (scanner.TraceScanner), named here rather than imported:
    the scanner finishes interrupted deletes on every scan, so it imports this module."""

    async def delete_objects(self, trace_id: str) -> int: ...

    def forget(self, trace_id: str) -> None: ...

    def warn_once(self, key: str, message: str, *args: object) -> None: ...

    def health_error(self) -> str | None: ...


class BucketDeleteError(Exception):
    """The S3 endpoint is down or refused to delete the trace's objects (the message says how)."""


# A DELETE waits this long for the bucket at most (a frozen endpoint's client retries for
# minutes); past it the journaled delete is left to the scans, which finish it once S3 answers.
BUCKET_DELETE_WAIT_S = 15.0


def endpoint_failing(scanner: TraceScanner | None, trace_id: str) -> str | None:
    """The 503 detail for a delete asked while /api/health knows the S3 endpoint is failing
    (nothing is changed then), or None."""
    reason = scanner.health_error() if scanner is not None else None
    if reason is None:
        return None
    return (
        f"the S3 endpoint is failing ({reason}): trace {trace_id} was not deleted; "
        "delete it again once /api/health shows no s3_error"
    )


def endpoint_timed_out(trace_id: str) -> str:
    return (
        f"the S3 endpoint did not answer within {BUCKET_DELETE_WAIT_S:g} s: the delete of trace "
        f"{trace_id} is journaled and finishes once the endpoint answers (it takes no new run meanwhile)"
    )


async def finish_trace_delete(
    store: Store, settings: Settings, scanner: TraceScanner | None, trace_id: str, *, in_bucket: bool = True
) -> None:
    """Carry a journaled delete to its end. `in_bucket` False: a sample, which has no objects.
    A failing bucket raises BucketDeleteError (the journal entry stays, so the trace takes no
    run meanwhile)."""
    if scanner is not None and in_bucket:
        try:
            await scanner.delete_objects(trace_id)
        except Exception as exc:
            raise BucketDeleteError(f"{type(exc).__name__}: {one_line(exc)}") from exc
    if await store.traces.get_trace(trace_id) is not None:
        await store.traces.delete_trace(trace_id)
    await asyncio.to_thread(remove_trace_files, settings, trace_id)
    if scanner is not None:
        scanner.forget(trace_id)
    await store.traces.end_trace_delete(trace_id)


async def resume_trace_deletes(store: Store, settings: Settings, scanner: TraceScanner | None) -> None:
    """Finish every delete the journal holds that no request is carrying out (after a crash they
    all are such); one that fails now (bucket down) is retried on the next call."""
    for trace_id in await store.traces.trace_deletes_in_progress():
        if trace_id in store.traces.deletes_under_way:
            continue
        store.traces.deletes_under_way.add(trace_id)
        try:
            trace = await store.traces.get_trace(trace_id)
            await finish_trace_delete(
                store, settings, scanner, trace_id, in_bucket=trace is None or not trace.sample
            )
        except Exception as exc:  # noqa: BLE001 - the bucket refused: the next scan tries again
            message = f"could not finish deleting trace {trace_id} yet: {one_line(exc)}"
            if scanner is not None:
                scanner.warn_once(f"{trace_id}\0{message}", "%s", message)
            else:
                log.warning("%s", message)
        else:
            log.info("finished deleting trace %s (a delete interrupted by a restart)", trace_id)
        finally:
            store.traces.deletes_under_way.discard(trace_id)


def remove_trace_files(settings: Settings, trace_id: str) -> None:
    """The trace's mirror and scan book (blocking: run in a thread)."""
    if trace_id_problem(trace_id):  # a trace refused for its id (say `..`) never had a mirror
        return
    shutil.rmtree(settings.traces_dir / trace_id, ignore_errors=True)
    (settings.trace_books_dir / f"{trace_id}.json").unlink(missing_ok=True)
