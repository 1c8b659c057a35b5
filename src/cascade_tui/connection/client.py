"""Async client for the Cascade HTTP API (httpx) and its run event stream (httpx-sse).

No Textual here: screens call it from workers, and it is tested against a real server on its own.
Every failure surfaces as `ApiError` with a message worded for an operator; the token is sent in a
header only and never appears in a message.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
from httpx_sse import SSEError, aconnect_sse
from pydantic import BaseModel, TypeAdapter, ValidationError

from cascade_core.error_detail import error_detail
from cascade_core.models import (
    AccuracyRow,
    Comparison,
    ConfigOption,
    GpuConfig,
    GpuConfigAdd,
    KernelStat,
    LauncherStatus,
    RunCreate,
    RunDetail,
    RunEvent,
    RunFile,
    RunResults,
    RunSummary,
    SimFile,
    SimStepTimeline,
    TraceDetail,
    TraceSummary,
)

from .client_errors import ApiError, NotCascade, Unauthorized, Unreachable
from .local_server import default_data_dir
from .paths import attachment_name, list_path, path_segment, safe_file_name

T = TypeVar("T")

# The stream sends a keepalive after 15 s of silence; a read timeout well above that tells a dead
# connection from a quiet one (httpx's default 5 s would drop every idle stream).
STREAM_TIMEOUT = httpx.Timeout(10.0, read=45.0)
REQUEST_TIMEOUT = httpx.Timeout(15.0, read=60.0)
MAX_BACKOFF_S = 10.0
# A token longer than this is no token `cascade serve` made (those are 43 characters): when the
# server refuses a request before reading it, the length is what to name.
LONG_TOKEN = 1000

_EVENT = TypeAdapter(RunEvent)


def parse_event(data: str) -> RunEvent:
    return _EVENT.validate_json(data)


class CascadeClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=REQUEST_TIMEOUT,
            transport=transport,
            # One connection per open run stream plus a few requests: plenty.
            limits=httpx.Limits(max_connections=20, max_keepalive_connections=10),
        )
        self.has_token = bool(token)
        self._token_length = len(token or "")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> CascadeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- plumbing ---------------------------------------------------------------------------

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            resp = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(self._unreachable_message(exc)) from None
        self._raise_for_status(resp)
        return resp

    def _unreachable_message(self, exc: Exception) -> str:
        kind = type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            return f"The server at {self.base_url} did not answer in time ({kind})."
        return (
            f"No Cascade server answers at {self.base_url} ({kind}). Start one with "
            "`cascade serve` (or `cascade up`), or set CASCADE_URL / --url."
        )

    def _raise_for_status(self, resp: httpx.Response) -> None:
        if resp.status_code < 400:
            return
        if resp.status_code == 401:
            if not self.has_token:  # nothing was refused: nothing was sent
                raise Unauthorized(self._needs_token_message(), status=401)
            raise Unauthorized(
                "The server refused the token (401 Unauthorized). Check CASCADE_TOKEN: it must be "
                "the `token:` line `cascade serve` printed.",
                status=401,
            )
        message = f"{resp.status_code}: {error_detail(resp)}"
        if resp.status_code in (400, 431) and self._token_length > LONG_TOKEN:
            # The server refused the request's headers; a token this long is the likely cause,
            # and naming its length says so without showing it.
            message += (
                f" (the token sent is {self._token_length:,} characters long; check "
                "CASCADE_TOKEN / --token: it must be the `token:` line `cascade serve` printed)"
            )
        raise ApiError(message, status=resp.status_code)

    async def _post_json(self, path: str, body: BaseModel) -> httpx.Response:
        headers = {"Content-Type": "application/json"}
        return await self._request("POST", path, content=body.model_dump_json(), headers=headers)

    async def _get_model(self, path: str, adapter: TypeAdapter[T]) -> T:
        resp = await self._request("GET", path)
        try:
            return adapter.validate_json(resp.content)
        except ValidationError as exc:
            raise ApiError(f"unexpected answer from {path}: {exc.error_count()} field errors") from None

    # --- checks -------------------------------------------------------------------------------

    def _needs_token_message(self) -> str:
        token_file = default_data_dir() / "token"
        return (
            f"the server at {self.base_url} needs a token: export CASCADE_TOKEN (or pass "
            f"--token) with the `token:` line `cascade serve` printed; a server started on "
            f"this machine keeps it in its data dir's token file ({token_file}, or "
            f"$CASCADE_DATA_DIR/token when the server was started with one)"
        )

    async def health(self) -> dict[str, Any]:
        """The health answer; `NotCascade` when whatever answers is not a Cascade server."""
        try:
            # Without the token: health needs none, and a token the server refuses (one too long
            # for its header limit) must not make a Cascade server look like another program.
            probe = self._http.build_request("GET", "/api/health")
            probe.headers.pop("Authorization", None)
            resp = await self._http.send(probe)
        except httpx.TransportError as exc:
            raise Unreachable(self._unreachable_message(exc)) from None
        if resp.status_code >= 500:  # a server (or a proxy before it) in trouble, not another program
            self._raise_for_status(resp)
        try:
            body = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if resp.status_code != 200 or not isinstance(body, dict) or body.get("ok") is not True:
            answer = f"{resp.status_code}" if resp.status_code != 200 else '200 without {"ok": true}'
            raise NotCascade(
                f"{self.base_url} answers but is not a Cascade server (GET /api/health: {answer}): "
                "is `cascade up` on another port? Its start line names it; pass it with --url or "
                "CASCADE_URL",
                status=resp.status_code,
            )
        return body

    async def not_cascade(self) -> NotCascade | None:
        """After a failed request: the reason, when the URL is not a Cascade server at all."""
        try:
            await self.health()
        except NotCascade as exc:
            return exc
        except ApiError:
            pass
        return None

    async def check(self) -> dict[str, Any]:
        """Health, then the token (one authenticated call); raises ApiError worded for operators."""
        health = await self.health()
        if health.get("auth", True) and not self.has_token:
            raise Unauthorized(self._needs_token_message(), status=401)
        await self._request("GET", "/api/traces")
        return health

    # --- resources ----------------------------------------------------------------------------

    async def traces(self, states: Sequence[str] = (), limit: int | None = None) -> list[TraceSummary]:
        return await self._get_model(list_path("/api/traces", states, limit), TypeAdapter(list[TraceSummary]))

    async def trace(self, trace_id: str) -> TraceDetail:
        return await self._get_model(f"/api/traces/{path_segment(trace_id)}", TypeAdapter(TraceDetail))

    async def gpu_configs(self) -> list[GpuConfig]:
        return await self._get_model("/api/gpu-configs", TypeAdapter(list[GpuConfig]))

    async def add_gpu_config(self, body: GpuConfigAdd) -> GpuConfig:
        """Add a GPU config of your own (`POST /api/gpu-configs`, an addition to the spec)."""
        return GpuConfig.model_validate_json((await self._post_json("/api/gpu-configs", body)).content)

    async def remove_gpu_config(self, name: str) -> None:
        await self._request("DELETE", f"/api/gpu-configs/{path_segment(name)}")

    async def launcher(self) -> LauncherStatus:
        """Where new sims go and how busy that is (`GET /api/launcher`, an addition to the spec)."""
        return await self._get_model("/api/launcher", TypeAdapter(LauncherStatus))

    async def runs(self, states: Sequence[str] = (), limit: int | None = None) -> list[RunSummary]:
        return await self._get_model(list_path("/api/runs", states, limit), TypeAdapter(list[RunSummary]))

    async def run(self, run_id: str) -> RunDetail:
        return await self._get_model(f"/api/runs/{run_id}", TypeAdapter(RunDetail))

    async def create_run(self, body: RunCreate) -> RunDetail:
        return RunDetail.model_validate_json((await self._post_json("/api/runs", body)).content)

    async def cancel_run(self, run_id: str) -> RunDetail:
        resp = await self._request("POST", f"/api/runs/{run_id}/cancel")
        return RunDetail.model_validate_json(resp.content)

    async def rerun(self, run_id: str) -> RunDetail:
        """A new run with the same trace and entries."""
        resp = await self._request("POST", f"/api/runs/{run_id}/rerun")
        return RunDetail.model_validate_json(resp.content)

    async def retry(self, run_id: str) -> RunDetail:
        """A new run with one sim per failed sim of `run_id`."""
        resp = await self._request("POST", f"/api/runs/{run_id}/retry")
        return RunDetail.model_validate_json(resp.content)

    async def delete_run(self, run_id: str) -> None:
        await self._request("DELETE", f"/api/runs/{run_id}")

    async def delete_trace(self, trace_id: str) -> None:
        await self._request("DELETE", f"/api/traces/{path_segment(trace_id)}")

    async def kernels(self, run_id: str) -> list[KernelStat]:
        return await self._get_model(f"/api/runs/{run_id}/kernels", TypeAdapter(list[KernelStat]))

    async def results(self, run_id: str) -> RunResults:
        """The run's whole results, every kernel's full stats map (about 30 KB per kernel)."""
        return await self._get_model(f"/api/runs/{run_id}/results", TypeAdapter(RunResults))

    async def accuracy(
        self, trace: str | None = None, config: str | None = None, points: bool = False
    ) -> list[AccuracyRow]:
        """`GET /api/accuracy` (an addition to the spec): per trace with real timing and variant."""
        params = {
            k: v
            for k, v in (("trace", trace), ("config", config), ("points", "true" if points else None))
            if v
        }
        path = f"/api/accuracy?{urlencode(params)}" if params else "/api/accuracy"
        return await self._get_model(path, TypeAdapter(list[AccuracyRow]))

    async def config_options(self, name: str) -> list[ConfigOption]:
        """The simulator options a config takes (`GET /api/gpu-configs/{name}/options`)."""
        return await self._get_model(
            f"/api/gpu-configs/{path_segment(name)}/options", TypeAdapter(list[ConfigOption])
        )

    async def comparison(self, run_id: str) -> Comparison:
        return await self._get_model(f"/api/runs/{run_id}/comparison", TypeAdapter(Comparison))

    async def step_timelines(self, run_id: str) -> list[SimStepTimeline]:
        return await self._get_model(f"/api/runs/{run_id}/step-timelines", TypeAdapter(list[SimStepTimeline]))

    async def run_files(self, run_id: str) -> list[RunFile]:
        return await self._get_model(f"/api/runs/{run_id}/files", TypeAdapter(list[RunFile]))

    async def sim_files(self, sim_id: str) -> list[SimFile]:
        return await self._get_model(f"/api/sims/{sim_id}/files", TypeAdapter(list[SimFile]))

    async def log_tail(self, sim_id: str, max_lines: int) -> tuple[list[str], int]:
        """The last `max_lines` lines of a sim's log and how many lines the whole log has.

        Streams the response so a log of millions of lines never sits in memory at once.
        """
        tail: deque[str] = deque(maxlen=max_lines)
        total = 0
        try:
            async with self._http.stream("GET", f"/api/sims/{sim_id}/log") as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    self._raise_for_status(resp)
                async for line in resp.aiter_lines():
                    tail.append(line.rstrip("\r\n"))
                    total += 1
        except httpx.TransportError as exc:
            raise Unreachable(self._unreachable_message(exc)) from None
        return list(tail), total

    async def download(self, path: str, dest_dir: Path, filename: str | None = None) -> Path:
        """Save GET `path` under `dest_dir` (created), as `filename` or the server's attachment
        name; written to a temporary name and renamed, so a partial file never looks complete."""
        dest_dir.mkdir(parents=True, exist_ok=True)
        try:
            async with self._http.stream("GET", path) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    self._raise_for_status(resp)
                name = safe_file_name(filename or attachment_name(resp) or path.rsplit("/", 1)[-1])
                final = dest_dir / name
                part = dest_dir / f".{name}.part"
                with open(part, "wb") as fh:
                    async for block in resp.aiter_bytes():
                        fh.write(block)
                os.replace(part, final)
                return final
        except httpx.TransportError as exc:
            raise Unreachable(self._unreachable_message(exc)) from None

    # --- the run event stream -------------------------------------------------------------------

    async def follow_run(
        self,
        run_id: str,
        on_state: Callable[[str, int, float | None], None],
        *,
        max_backoff: float = MAX_BACKOFF_S,
    ) -> AsyncIterator[RunEvent]:
        """Yield the run's events forever, reconnecting after a drop.

        Every connection starts with a snapshot, so a consumer applying events in order is
        consistent again after each reconnect. `on_state(state, attempt, retry_in)` reports
        "connecting", "live" and "reconnecting" (with the attempt number and the delay before
        the next try). A 401 or 404 is raised: retrying cannot fix them.
        """
        attempt = 0
        while True:
            on_state("connecting" if attempt == 0 else "reconnecting", attempt, None)
            try:
                async with aconnect_sse(
                    self._http, "GET", f"/api/runs/{run_id}/events", timeout=STREAM_TIMEOUT
                ) as source:
                    resp = source.response
                    if resp.status_code in (401, 404) or 400 <= resp.status_code < 500:
                        await resp.aread()
                        self._raise_for_status(resp)
                    if resp.status_code >= 500:
                        raise httpx.RemoteProtocolError(f"server answered {resp.status_code}")
                    async for sse in source.aiter_sse():
                        # httpx-sse reports comment lines (keepalives) as events with empty data.
                        if not sse.data:
                            continue
                        try:
                            event = parse_event(sse.data)
                        except ValidationError:
                            continue  # an event type this client does not know: skip it
                        if event.type == "snapshot":
                            attempt = 0
                            on_state("live", 0, None)
                        yield event
            except (httpx.TransportError, SSEError):
                pass  # connection refused, reset, timed out, or a proxy's error page
            attempt += 1
            delay = min(max_backoff, 0.25 * 2 ** min(attempt, 8)) * random.uniform(0.7, 1.0)
            on_state("reconnecting", attempt, delay)
            await asyncio.sleep(delay)
