"""A log parser's saved state, read back: checked field by field, since it comes from the
database (a damaged page, an older Cascade's state), and a state that cannot be read is a
ValueError that says why (the sim's whole log is then parsed again). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .restarts import Restarts

# 3: with the restart the log is in and the counts of dropped and failed kernels (2, still read:
# none); 2: the open block is its (key, value) pairs in log order; 1 (still read): its stats map.
STATE_VERSION = 3


@dataclass(slots=True)
class SavedState:
    kernels_done: int
    current_kernel: str | None
    latest: dict[str, float | None]
    log_tail: list[str]
    exit_detected: bool
    block: list[tuple[str, float | str]] | None
    block_ended: bool
    restarts: Restarts


def read_state(state: object, latest_keys: set[str]) -> SavedState:
    if not isinstance(state, dict):
        kind = type(state).__name__
        raise ValueError(f"invalid LogParser state: expected an object, got {kind}")
    try:
        version = state.get("version")
        if version not in (1, 2, STATE_VERSION):
            raise ValueError(f"unsupported version {version!r} (expected {STATE_VERSION})")
        kernels_done = state["kernels_done"]
        current = state["current_kernel"]
        latest = state["latest"]
        tail = state["log_tail"]
        exit_detected = state["exit_detected"]
        block = state["block"]
        block_ended = state["block_ended"]
        restarts = Restarts.from_state(state)
        if not isinstance(kernels_done, int) or kernels_done < 0:
            raise ValueError("kernels_done must be a non-negative integer")
        if current is not None and not isinstance(current, str):
            raise ValueError("current_kernel must be a string or null")
        if not isinstance(latest, dict) or set(latest) != latest_keys:
            raise ValueError(f"latest must have exactly the keys {sorted(latest_keys)}")
        if not all(v is None or isinstance(v, (int, float)) for v in latest.values()):
            raise ValueError("latest values must be numbers or null")
        if not isinstance(tail, list) or not all(isinstance(x, str) for x in tail):
            raise ValueError("log_tail must be a list of strings")
        if not isinstance(exit_detected, bool) or not isinstance(block_ended, bool):
            raise ValueError("exit_detected and block_ended must be booleans")
        if version == 1 and isinstance(block, dict):
            block = list(block.items())  # its keys numbered already: numbered again, they stay
        if block is not None and not _is_block(block):
            raise ValueError("block must be null or (key, value) pairs, the first a string kernel_name")
    except KeyError as exc:
        raise ValueError(f"invalid LogParser state: missing {exc}") from None
    except ValueError as exc:
        raise ValueError(f"invalid LogParser state: {exc}") from None
    return SavedState(
        kernels_done=kernels_done,
        current_kernel=current,
        latest={k: (None if v is None else float(v)) for k, v in latest.items()},
        log_tail=tail,
        exit_detected=exit_detected,
        block=None if block is None else [(key, value) for key, value in block],
        block_ended=block_ended,
        restarts=restarts,
    )


def _is_block(block: object) -> bool:
    """Whether a saved open block is (key, value) pairs, the first the kernel's name."""
    return (
        isinstance(block, list)
        and bool(block)
        and all(
            isinstance(pair, (list, tuple))
            and len(pair) == 2
            and isinstance(pair[0], str)
            and isinstance(pair[1], (int, float, str))
            for pair in block
        )
        and block[0][0] == "kernel_name"
        and isinstance(block[0][1], str)
    )
