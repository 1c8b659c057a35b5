"""A trace on a compute node without the server's filesystem: fetched over the API, once per node.

`CASCADE_TRACE_DIR` names the trace where the server keeps it. On a node that shares that
filesystem the worker reads it in place. Elsewhere it downloads the trace's simulator inputs
(`GET /api/traces/{id}/inputs`) into `<scratch parent>/cascade-traces/<trace id>/`:

- once per node: the first worker downloads under an exclusive lock; the others wait for it and
  then find the copy complete (a `.complete` marker written last);
- cleaned: every worker holds a shared lock on `<trace id>.users` while it simulates; the last
  one to finish (its exclusive lock succeeds) deletes the copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
from pathlib import Path

import httpx

from cascade_core.error_detail import error_detail

log = logging.getLogger("cascade_worker")

COMPLETE = ".complete"


class FetchError(Exception):
    """The trace could not be fetched; the message is the sim's error."""


def cache_root(scratch_parent: Path | None) -> Path:
    return (scratch_parent or Path(tempfile.gettempdir())) / "cascade-traces"


def has_trace(trace_dir: Path | None) -> bool:
    return trace_dir is not None and (trace_dir / "traces" / "kernelslist.g").is_file()


class NodeTrace:
    """`async with NodeTrace(...) as trace_dir:` a local copy, shared by the node's workers."""

    def __init__(self, url: str, token: str | None, trace_id: str, root: Path) -> None:
        self.url, self.token, self.trace_id, self.root = url.rstrip("/"), token, trace_id, root
        self.directory = root / trace_id
        self._users: int | None = None  # fd holding the shared lock

    async def __aenter__(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        self._users = os.open(self.root / f"{self.trace_id}.users", os.O_RDWR | os.O_CREAT, 0o600)
        await asyncio.to_thread(fcntl.flock, self._users, fcntl.LOCK_SH)
        lock = os.open(self.root / f"{self.trace_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
            if not (self.directory / COMPLETE).is_file():
                await self._download()
        except BaseException:
            await self.__aexit__()
            raise
        finally:
            os.close(lock)
        return self.directory

    async def __aexit__(self, *exc: object) -> None:
        if self._users is None:
            return
        try:
            # The last worker of this trace on the node removes the copy.
            fcntl.flock(self._users, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
            with contextlib.suppress(OSError):
                (self.root / f"{self.trace_id}.users").unlink()
        finally:
            os.close(self._users)
            self._users = None

    async def _download(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)  # a half-done copy of a crashed worker
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        base = f"{self.url}/api/traces/{self.trace_id}/inputs"
        try:
            async with httpx.AsyncClient(headers=headers, timeout=60) as http:
                listing = await http.get(base)
                if listing.status_code != 200:
                    raise FetchError(
                        f"cannot list trace {self.trace_id}'s files: HTTP {listing.status_code} "
                        f"{error_detail(listing)}"
                    )
                files = listing.json()["files"]
                log.info(
                    "fetching trace %s (%d files, %d bytes) into %s",
                    self.trace_id,
                    len(files),
                    sum(f["size"] for f in files),
                    self.directory,
                )
                for entry in files:
                    await self._fetch(
                        http, f"{base}/{entry['path']}", self.directory / entry["path"], entry["size"]
                    )
        except httpx.HTTPError as exc:
            raise FetchError(f"cannot fetch trace {self.trace_id}: {type(exc).__name__}") from None
        (self.directory / COMPLETE).write_text("")

    @staticmethod
    async def _fetch(http: httpx.AsyncClient, url: str, target: Path, size: int) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        async with http.stream("GET", url) as response:
            if response.status_code != 200:
                await response.aread()
                raise FetchError(
                    f"cannot fetch {target.name}: HTTP {response.status_code} {error_detail(response)}"
                )
            with open(target, "wb") as out:
                async for block in response.aiter_bytes(1 << 20):
                    out.write(block)
        if target.stat().st_size != size:
            raise FetchError(f"{target.name} arrived with {target.stat().st_size} bytes, not {size}")
