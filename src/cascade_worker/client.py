"""The simulator side of the API (spec 002): heartbeat, log chunks, file uploads, with retries.

Every call is safe to repeat (the server ignores a repeated `seq`, a re-put file replaces the
old one), so anything that may be transient is retried with backoff: connection errors,
timeouts, 5xx, 408 and 429. Other 4xx answers cannot get better by retrying and raise
`ApiRefused` at once. The token goes only into the Authorization header, never into a message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from cascade_core.error_detail import error_detail
from cascade_core.models import (
    Heartbeat,
    HeartbeatAck,
    LogChunk,
    SimFile,
    SimResults,
    StepTimelineUpload,
)

from .backoff import Backoff

log = logging.getLogger("cascade_worker")

# 507: the server's disk is full; the same call succeeds once space is freed.
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 507})


class ApiRefused(Exception):
    """The server answered with a status that retrying cannot change (401, 404, 413, 422...)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class ServerUnreachable(Exception):
    """No successful answer for longer than the give-up limit."""


class SimClient:
    def __init__(
        self,
        url: str,
        token: str | None,
        sim_id: str,
        *,
        timeout: float = 30.0,
        give_up_after: float | None = None,
        backoff: Callable[[], Backoff] = Backoff,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self.sim_id = sim_id
        self.give_up_after = give_up_after
        self._backoff = backoff
        self._sleep = sleep

    async def __aenter__(self) -> SimClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def heartbeat(self, beat: Heartbeat, *, give_up_after: float | None = None) -> HeartbeatAck:
        response = await self._call(
            "POST",
            f"/api/sims/{self.sim_id}/heartbeat",
            json=beat.model_dump(mode="json"),
            give_up_after=give_up_after,
        )
        return HeartbeatAck.model_validate(response.json())

    async def send_chunk(self, chunk: LogChunk, *, give_up_after: float | None = None) -> None:
        await self._call(
            "POST",
            f"/api/sims/{self.sim_id}/logs",
            content=chunk.model_dump_json(),
            headers={"Content-Type": "application/json"},
            give_up_after=give_up_after,
        )

    async def put_file(self, name: str, data: bytes, *, give_up_after: float | None = None) -> SimFile:
        response = await self._call(
            "PUT",
            f"/api/sims/{self.sim_id}/files/{name}",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
            give_up_after=give_up_after,
        )
        return SimFile.model_validate(response.json())

    async def sim_results(self, *, give_up_after: float | None = None) -> SimResults:
        """This sim's kernels with their simulated times (what `cascade simulate` reads)."""
        response = await self._call("GET", f"/api/sims/{self.sim_id}/results", give_up_after=give_up_after)
        return SimResults.model_validate_json(response.content)

    async def put_step_timeline(
        self, upload: StepTimelineUpload, *, give_up_after: float | None = None
    ) -> None:
        await self._call(
            "POST",
            f"/api/sims/{self.sim_id}/step-timeline",
            content=upload.model_dump_json(),
            headers={"Content-Type": "application/json"},
            give_up_after=give_up_after,
        )

    async def _call(
        self, method: str, path: str, *, give_up_after: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        limit = self.give_up_after if give_up_after is None else give_up_after
        backoff = self._backoff()
        started = time.monotonic()
        while True:
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if response.is_success:
                    return response
                if response.status_code not in RETRYABLE_STATUS:
                    raise ApiRefused(response.status_code, error_detail(response))
                problem = f"HTTP {response.status_code}"
            if limit is not None and time.monotonic() - started >= limit:
                raise ServerUnreachable(f"{method} {path}: gave up after {limit:.0f} s ({problem})")
            delay = backoff.next_delay()
            if backoff.attempt in (1, 5) or backoff.attempt % 20 == 0:
                log.warning(
                    "%s %s failed (%s); retrying (attempt %d)", method, path, problem, backoff.attempt
                )
            await self._sleep(delay)
