"""Child processes that never outlive the server (Linux): `preexec_fn=die_with_parent()`."""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` that has the kernel send `signum` to the child when the process that
    started it dies, even by SIGKILL (prctl PR_SET_PDEATHSIG). Start children from the event
    loop's thread: the signal follows the thread that forked."""
    parent = os.getpid()

    def preexec() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signum)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signum)

    return preexec
