"""The trace scanner: every `scan_interval_s` it lists `accelsim-traces/` in the bucket (boto3, in a
thread), registers new traces, mirrors new or changed objects into `data_dir/traces/<trace_id>/`,
reads `metadata.json`, and once the upload is complete post-processes the trace in a separate
process and marks it `ready` with its kernels.

Restarts: the traces live in the store, and each trace's per-object bookkeeping in its book
(mirror.py), so a restarted scanner downloads only what changed, resumes
`processing` traces and leaves `ready`/`failed` ones alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cascade_core.models import TraceDetail, utcnow
from cascade_core.real_timing import RealRow
from cascade_core.s3_endpoint import S3Info, make_client
from cascade_core.trace_kernels import KernelStatsError
from cascade_core.trace_layout import METADATA_NAME, TRACES_PREFIX
from cascade_core.upload_rules import trace_id_problem

from .completeness import (
    incomplete_upload_error,
    is_safe_relative_path,
    kernel_count,
    missing_metadata_error,
    pending_files,
    split_key,
)
from .deletion import resume_trace_deletes
from .downloads import clear_downloads
from .metadata import FAILED_STATUS_ERROR, MetadataError, metadata_from_dict, read_metadata_file
from .mirror import Listing, TraceMirror
from .postprocess import NO_SPACE_ERRNOS, NO_SPACE_REASON
from .postprocess_runner import run_postprocessor
from .ready_fields import ready_fields, refill_real_timing
from .scan_errors import TraceReadError, TraceRetryLater, one_line

if TYPE_CHECKING:
    from ..settings import Settings
    from ..storage import Store

log = logging.getLogger(__name__)

TERMINAL_STATES = ("ready", "failed")
# A listing of the bucket still unanswered after this long (twice the client's connect timeout)
# is reported as the endpoint's problem while it lasts: a stopped or wedged endpoint accepts the
# connection and never answers, and the client's own timeouts and retries take minutes.
STALLED_AFTER_S = 10.0


class TraceScanner:
    def __init__(self, store: Store, settings: Settings, s3: S3Info) -> None:
        self.store = store
        self.settings = settings
        self.s3 = s3
        self.client = make_client(s3)
        self.mirror_root = settings.traces_dir
        self.mirror = TraceMirror(settings, s3, self.client)
        self.traces: dict[str, TraceDetail] = {}
        self._last_progress: dict[str, float] = {}  # monotonic time of the last object change
        self._processing: dict[str, asyncio.Task[None]] = {}
        self._process_slots = asyncio.Semaphore(max(1, (os.cpu_count() or 2) // 2))
        self._warned: set[str] = set()
        # Traces that failed for lack of disk space -> free bytes then (retried when it grows).
        self._no_space: dict[str, int] = {}
        # Called with every trace the scanner stores, in order (tests and events hook in here).
        self.listeners: list[Callable[[TraceDetail], None]] = []
        # Trace ids whose leftover files (from a deleted trace of the same id) were cleared before
        # this process first mirrored them.
        self._cleared: set[str] = set()
        self._scans_started = 0
        self._scans_done = 0
        self._scan_cond = asyncio.Condition()
        self.last_error: str | None = None
        self._listing_since: float | None = None  # monotonic start of the listing in progress
        self._refill: asyncio.Task[None] | None = None  # real timing of traces ready before it was stored

    # --- lifecycle ---------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the known traces from the store; remove files left of traces that have no row (a
        crash after a delete committed); resume post-processing interrupted by a restart. Deletes
        a crash interrupted take no run from now on, and are finished by the first scan."""
        await self.store.traces.trace_deletes_in_progress()
        for summary in await self.store.traces.list_traces():
            detail = await self.store.traces.get_trace(summary.id)
            if detail is not None:
                self.traces[detail.id] = detail
        await asyncio.to_thread(self.mirror.remove_leftovers, set(self.traces))
        await asyncio.to_thread(clear_downloads, self.settings)
        self._refill = asyncio.create_task(
            refill_real_timing(self.store, self.traces, self.mirror.directory, self.settings, self._save)
        )
        for detail in self.traces.values():
            if detail.state == "processing" and not detail.sample:
                self._start_processing(detail.id)
            elif detail.state == "failed" and NO_SPACE_REASON in (detail.error or ""):
                self._no_space[detail.id] = -(1 << 62)  # retried on the first scan

    async def run(self) -> None:
        """Scan forever, every `scan_interval_s`; a failed scan (endpoint down, ...) is logged
        once per distinct error and retried on the next tick."""
        while True:
            try:
                await self.scan_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep scanning whatever the endpoint does
                message = f"{type(exc).__name__}: {exc}".splitlines()[0]
                if message != self.last_error:
                    log.warning("trace scan of %s failed: %s", self.s3.endpoint or "S3", message)
                self.last_error = message
            await asyncio.sleep(self.settings.scan_interval_s)

    async def close(self) -> None:
        tasks = [*self._processing.values(), *([self._refill] if self._refill else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def health_error(self) -> str | None:
        """Why the endpoint is not answering now, for /api/health: a listing waiting longer than
        STALLED_AFTER_S, else why the last scan failed (None once one worked)."""
        if self._listing_since is not None:
            waited = time.monotonic() - self._listing_since
            if waited > STALLED_AFTER_S:
                return f"no answer from {self.s3.endpoint or 'S3'} for {waited:.0f} s (listing the bucket)"
        return self.last_error

    async def wait_for_scan(self, timeout: float = 30.0) -> None:
        """Wait until a scan that started after this call has finished (it saw the bucket as it
        is now)."""
        async with self._scan_cond:
            target = self._scans_started + 1
            await asyncio.wait_for(self._scan_cond.wait_for(lambda: self._scans_done >= target), timeout)

    # --- one scan ----------------------------------------------------------------------------

    async def scan_once(self) -> None:
        async with self._scan_cond:
            self._scans_started += 1
        try:
            await resume_trace_deletes(self.store, self.settings, self)
            await self._retry_when_space_is_back()
            self._listing_since = time.monotonic()
            try:
                listing = await asyncio.to_thread(self._list_bucket, self._settled())
            finally:
                self._listing_since = None
            self.last_error = None
            for trace_id, objects in sorted(listing.items()):
                await self._scan_trace_isolated(trace_id, objects)
        finally:
            async with self._scan_cond:
                self._scans_done += 1
                self._scan_cond.notify_all()

    def _settled(self) -> set[str]:
        """Traces the scan leaves alone: ready, failed, samples, or being post-processed."""
        return {
            trace_id
            for trace_id, trace in self.traces.items()
            if trace.state in TERMINAL_STATES or trace.sample or trace_id in self._processing
        }

    def _list_bucket(self, settled: set[str]) -> dict[str, Listing]:
        """The objects of every trace still in progress. Trace prefixes come from a delimiter
        listing, so a bucket full of finished traces costs one short listing per scan."""
        paginator = self.client.get_paginator("list_objects_v2")
        trace_ids = []
        for page in paginator.paginate(Bucket=self.s3.bucket, Prefix=TRACES_PREFIX, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                trace_id = common["Prefix"][len(TRACES_PREFIX) :].rstrip("/")
                if trace_id and trace_id not in settled:
                    trace_ids.append(trace_id)
        traces: dict[str, Listing] = {}
        for trace_id in trace_ids:
            for page in paginator.paginate(Bucket=self.s3.bucket, Prefix=f"{TRACES_PREFIX}{trace_id}/"):
                for obj in page.get("Contents", []):
                    parts = split_key(obj["Key"])
                    if parts is None or parts[0] != trace_id:
                        continue
                    rel = parts[1]
                    if not is_safe_relative_path(rel):
                        self.warn_once(obj["Key"], "ignoring object %s: its path leaves the trace directory")
                        continue
                    traces.setdefault(trace_id, {})[rel] = (int(obj["Size"]), obj["LastModified"].isoformat())
        return traces

    def warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *(args or (key,)))

    async def _scan_trace_isolated(self, trace_id: str, objects: Listing) -> None:
        """Scan one trace; whatever goes wrong with it stays with it (never the scan, never the
        traces sorting after it)."""
        try:
            await self._scan_trace(trace_id, objects)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure reading one trace stays with it
            # A full data dir (the scan's own bookkeeping) is not the trace's fault either.
            if isinstance(exc, TraceRetryLater) or (
                isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS
            ):
                self.warn_once(
                    f"{trace_id}\0{exc}", "trace %s: %s; trying again on the next scan", trace_id, exc
                )
            elif isinstance(exc, TraceReadError):
                await self._fail(trace_id, str(exc))
            else:
                await self._fail(trace_id, f"could not read the trace: {type(exc).__name__}: {one_line(exc)}")

    async def _fail(self, trace_id: str, error: str) -> None:
        """Fail a trace with `error`, keeping only what was stored before the failing read (the
        fields that failed may be what cannot be stored)."""
        trace = self.traces.get(trace_id)
        if trace is None:
            now = utcnow()
            trace = TraceDetail(id=trace_id, state="uploading", created_at=now, updated_at=now)
        await self._save(trace.model_copy(update={"state": "failed", "error": error, "updated_at": utcnow()}))

    async def _scan_trace(self, trace_id: str, objects: Listing) -> None:
        trace = self.traces.get(trace_id)
        if trace is not None and (
            trace.state in TERMINAL_STATES or trace.sample or trace_id in self._processing
        ):
            return
        if trace is None:
            now = utcnow()
            trace = TraceDetail(id=trace_id, state="uploading", created_at=now, updated_at=now)
            if problem := trace_id_problem(trace_id):
                await self._save(trace.model_copy(update={"state": "failed", "error": problem}))
                return
            if trace_id not in self._cleared:  # a new trace never reuses a deleted one's files
                await asyncio.to_thread(self.mirror.clear_files, trace_id)
                self._cleared.add(trace_id)
        if trace.state == "processing":  # stored as processing, task not running (cannot happen
            self._start_processing(trace_id)  # after load(), but never leave a trace stuck)
            return

        book = self.mirror.book(trace_id)
        self._last_progress.setdefault(trace_id, time.monotonic())
        to_fetch = sorted(rel for rel, info in objects.items() if book.get(rel) != info)
        removed = sorted(rel for rel in book if rel not in objects)
        fetched: list[str] = []
        if to_fetch or removed:
            fetched = await asyncio.to_thread(self.mirror.fetch, trace_id, to_fetch, removed)
            for rel in fetched:
                book[rel] = objects[rel]
            for rel in removed:
                book.pop(rel, None)
            self.mirror.save_book(trace_id)
            self._last_progress[trace_id] = time.monotonic()

        update: dict[str, Any] = {
            "kernel_count": kernel_count(book),
            "bytes": sum(size for size, _ in book.values()),
        }
        meta = None
        try:
            if METADATA_NAME in book and (METADATA_NAME in fetched or trace.metadata is None):
                path = self.mirror.directory(trace_id) / METADATA_NAME
                meta = await asyncio.to_thread(read_metadata_file, path, trace_id)
                update.update(meta.trace_fields(), metadata=meta.raw)
            elif trace.metadata is not None:
                meta = metadata_from_dict(trace.metadata, trace_id)
        except MetadataError as exc:
            update.update(state="failed", error=str(exc))
        waited = time.monotonic() - self._last_progress[trace_id]
        if meta is not None and meta.failed:
            update.update(state="failed", error=FAILED_STATUS_ERROR)
        elif (
            meta is None and update.get("state") != "failed" and waited > self.settings.trace_upload_timeout_s
        ):
            update.update(state="failed", error=missing_metadata_error(waited))  # the same timeout
        elif meta is not None and update.get("state") != "failed":
            mirrored = {rel: size for rel, (size, _) in book.items()}
            pending = pending_files(meta.files, mirrored)
            if not pending:
                update["state"] = "processing"
            elif waited > self.settings.trace_upload_timeout_s:
                update.update(state="failed", error=incomplete_upload_error(pending, waited))

        new = trace_id not in self.traces
        if new and update.get("state") == "processing":
            # Every trace is registered as uploading first, even one that arrived within a scan.
            await self._save(trace.model_copy(update={k: v for k, v in update.items() if k != "state"}))
            trace = self.traces[trace_id]
        changed = new or any(getattr(trace, k) != v for k, v in update.items())
        if changed:
            await self._save(trace.model_copy(update={**update, "updated_at": utcnow()}))
        if update.get("state") == "processing":
            self._start_processing(trace_id)

    # --- deleting -----------------------------------------------------------------------------

    async def delete_objects(self, trace_id: str) -> int:
        """Delete the trace's objects from the bucket, so no later scan brings it back and its id
        can be uploaded again; returns how many. Call it while the trace is still known (a scan
        leaves a finished trace alone), then `forget` it."""
        return await asyncio.to_thread(self.mirror.delete_objects, trace_id)

    def forget(self, trace_id: str) -> None:
        """Drop what the scanner remembers of a deleted trace (a new upload starts afresh)."""
        self.traces.pop(trace_id, None)
        self.mirror.forget(trace_id)
        self._last_progress.pop(trace_id, None)
        self._cleared.discard(trace_id)

    # --- processing --------------------------------------------------------------------------

    def _start_processing(self, trace_id: str) -> None:
        if trace_id not in self._processing:
            task = asyncio.create_task(self._process(trace_id), name=f"postprocess {trace_id}")
            self._processing[trace_id] = task

    async def _process(self, trace_id: str) -> None:
        free_then: int | None = None  # set when it failed for lack of disk space
        rows: list[RealRow] = []  # the real timing stored with a ready trace
        try:
            async with self._process_slots:
                error, no_space = await run_postprocessor(self.mirror.directory(trace_id), self.settings)
                fields: dict[str, Any]
                if error is not None:
                    fields = {"state": "failed", "error": f"post-processing failed: {error}"}
                    if no_space:
                        free_then = self._free_bytes()
                else:
                    try:
                        fields, rows = await ready_fields(
                            self.mirror.directory(trace_id),
                            self.traces[trace_id].metadata,
                            self.settings.postprocess_timeout_s,
                        )
                        fields["state"] = "ready"
                    except (KernelStatsError, OSError) as exc:
                        fields = {"state": "failed", "error": str(exc).splitlines()[0]}
            trace = self.traces[trace_id]
            await self._save(trace.model_copy(update={**fields, "updated_at": utcnow()}), rows)
        finally:
            self._processing.pop(trace_id, None)
        if free_then is not None:
            # Only now, saved as failed and no longer processing: a scan during the save saw it
            # still `processing`, and `_retry_when_space_is_back` drops such an entry for good.
            self._no_space[trace_id] = free_then

    def _free_bytes(self) -> int:
        try:
            return shutil.disk_usage(self.mirror_root).free
        except OSError:
            return 0

    async def _retry_when_space_is_back(self) -> None:
        """Process again a trace that failed for lack of disk space once the free space has grown
        by at least the trace's size since (or after a restart: at once)."""
        for trace_id, free_then in list(self._no_space.items()):
            trace = self.traces.get(trace_id)
            if trace is None or trace.state != "failed":
                self._no_space.pop(trace_id, None)
                continue
            if self._free_bytes() <= free_then + max(trace.bytes, 1 << 20):
                continue
            self._no_space.pop(trace_id)
            log.info("retrying trace %s: disk space is back", trace_id)
            await self._save(
                trace.model_copy(update={"state": "processing", "error": None, "updated_at": utcnow()})
            )
            self._start_processing(trace_id)

    # --- store -------------------------------------------------------------------------------

    async def _save(self, trace: TraceDetail, real_timing: list[RealRow] | None = None) -> None:
        """Store the trace; with `real_timing` (a trace that became ready), its rows too."""
        await self.store.traces.put_trace(trace, real_timing if trace.state == "ready" else None)
        before = self.traces.get(trace.id)
        if trace.state == "failed" and (before is None or before.state != "failed"):
            log.warning("trace %s failed: %s", trace.id, trace.error)
        self.traces[trace.id] = trace
        for listener in self.listeners:
            listener(trace)
