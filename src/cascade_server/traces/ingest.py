"""Wires the trace scanner into the aiohttp app: `app.cleanup_ctx.append(trace_ingest_ctx)` after
the store's context. It scans the bucket `resolve_s3_info(settings)` names: `CASCADE_S3_ENDPOINT`,
or the embedded endpoint `cascade serve` started (recorded in the data dir)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from cascade_core.s3_endpoint import resolve_s3_info

from ..appkeys import SETTINGS_KEY, STORE_KEY
from .deletion import resume_trace_deletes
from .scanner import TraceScanner

log = logging.getLogger(__name__)

TRACE_SCANNER_KEY: web.AppKey[TraceScanner] = web.AppKey("trace_scanner", TraceScanner)


async def trace_ingest_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS_KEY]
    s3 = resolve_s3_info(settings)
    if s3 is None:
        log.warning(
            "no S3 endpoint: set CASCADE_S3_ENDPOINT or start the embedded one with `cascade serve`; "
            "traces will not be ingested"
        )
        await resume_trace_deletes(app[STORE_KEY], settings, None)  # samples: no bucket objects
        yield
        return
    scanner = TraceScanner(app[STORE_KEY], settings, s3)
    await scanner.load()
    app[TRACE_SCANNER_KEY] = scanner
    task = asyncio.create_task(scanner.run(), name="trace scanner")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await scanner.close()
