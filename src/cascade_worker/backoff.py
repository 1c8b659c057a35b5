"""How long to wait before retrying a call: exponential backoff with full jitter. Pure.

Full jitter (a uniform draw between 0 and the exponential ceiling) spreads out many workers that
lost the same server at the same moment, so they do not all come back at once when it returns.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    base: float = 0.25
    cap: float = 15.0
    floor: float = 0.05
    uniform: Callable[[float, float], float] = field(default=random.uniform)
    attempt: int = 0

    def next_delay(self) -> float:
        """The wait before the next retry; each call doubles the ceiling up to `cap`."""
        ceiling = min(self.cap, self.base * (2 ** min(self.attempt, 30)))
        self.attempt += 1
        return max(self.floor, self.uniform(0.0, ceiling))

    def reset(self) -> None:
        self.attempt = 0
