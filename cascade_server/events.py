"""One broker per server, one topic per run: fans committed events out to SSE subscribers.

Events are published by the store after each commit, while it still holds the writer lock, so
every subscriber sees them in commit order. Each event is serialised once and shared.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from pydantic import BaseModel

SUBSCRIBER_QUEUE_LIMIT = 2000


def sse_frame(event: BaseModel) -> bytes:
    """One server-sent event: a single `data:` line of JSON and a blank line (no event:/id:)."""
    return b"data: " + event.model_dump_json().encode() + b"\n\n"


class Subscriber:
    """A bounded queue of frames; overflowing it disconnects the subscriber (spec 000)."""

    def __init__(self, limit: int = SUBSCRIBER_QUEUE_LIMIT, on_overflow=None) -> None:
        self.limit = limit
        # Called once when the queue overflows: the SSE handler closes the connection, since
        # it may be stuck writing to a client that stopped reading.
        self.on_overflow = on_overflow
        self.frames: list[bytes] = []
        self.overflowed = False
        self.wakeup = asyncio.Event()

    def push(self, frame: bytes) -> None:
        if self.overflowed:
            return
        if len(self.frames) >= self.limit:
            self.overflowed = True
            self.frames.clear()
            if self.on_overflow is not None:
                self.on_overflow()
        else:
            self.frames.append(frame)
        self.wakeup.set()

    def drain(self) -> list[bytes]:
        frames, self.frames = self.frames, []
        self.wakeup.clear()
        return frames


class Broker:
    def __init__(self) -> None:
        self._topics: dict[str, set[Subscriber]] = defaultdict(set)

    def has_subscribers(self, run_id: str) -> bool:
        return bool(self._topics.get(run_id))

    def subscribe(self, run_id: str, on_overflow=None) -> Subscriber:
        sub = Subscriber(on_overflow=on_overflow)
        self._topics[run_id].add(sub)
        return sub

    def unsubscribe(self, run_id: str, sub: Subscriber) -> None:
        subs = self._topics.get(run_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._topics[run_id]

    def subscriber_count(self, run_id: str) -> int:
        return len(self._topics.get(run_id, ()))

    def publish(self, run_id: str, frames: list[bytes]) -> None:
        for sub in self._topics.get(run_id, ()):
            for frame in frames:
                sub.push(frame)
