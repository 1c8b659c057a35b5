"""Which kernel a simulator is on, from its output: the one to blame when it stops. Pure: fed
lines (and the time), no I/O.

Accel-Sim says `Processing kernel <path>` before it reads a kernel's trace, `launching kernel
name: <name> uid: <n> ...` when it launches it (uids count the kernels of its list from 1, in list
order), and the stats block it prints when the kernel finishes (`kernel_launch_uid = <n>` near
its start; the kernel counts as finished at the block's last line, `gpgpu_silicon_slowdown = `,
as the server's log parser counts it: a simulator that dies mid-block has not finished it). Kernels on
different CUDA streams may run at once, so the kernel to blame is the earliest one in list order
that the simulator had begun and not finished: every kernel before it had finished.
"""

from __future__ import annotations

from collections.abc import Sequence

_PROCESSING = "Processing kernel "
_LAUNCHING = "launching kernel name: "
_FINISHING = "kernel_launch_uid = "
_BLOCK_END = "gpgpu_silicon_slowdown = "


def _number(text: str) -> bool:
    """ASCII digits, as the simulator prints a uid (isdigit() alone takes `²`, which int()
    refuses: a kernel name holding ` uid: ²` must not stop the reading of the output)."""
    return text.isascii() and text.isdigit() and len(text) <= 12


class KernelWatch:
    def __init__(self, positions: Sequence[int], names: Sequence[str], now: float) -> None:
        """`positions`: the trace positions of the simulator's list, in list order; `names`: the
        kernel trace file each names."""
        self.positions = list(positions)
        self._by_file = {name: i for i, name in enumerate(names)}
        self._begun: set[int] = set()  # list indexes (0-based)
        self._finished: set[int] = set()
        self._finishing: list[int] = []  # the uids of the stats block being printed
        self._names: dict[int, str] = {}
        self.last_progress = now  # when a kernel last launched or finished

    def feed(self, line: str, now: float) -> None:
        if line.startswith(_PROCESSING):
            index = self._by_file.get(line[len(_PROCESSING) :].strip().rpartition("/")[2])
            if index is not None:
                self._begun.add(index)
        elif line.startswith(_LAUNCHING):
            name, _, rest = line[len(_LAUNCHING) :].partition(" uid: ")
            uid = rest.split(" ", 1)[0]
            if _number(uid) and 0 < int(uid) <= len(self.positions):
                self._begun.add(int(uid) - 1)
                self._names[int(uid) - 1] = name
                self.last_progress = now
        elif line.startswith(_FINISHING):  # concurrent kernels' block: "3 4"
            uids = line[len(_FINISHING) :].split()
            self._finishing = [int(u) - 1 for u in uids if _number(u) and 0 < int(u) <= len(self.positions)]
        elif line.startswith(_BLOCK_END) and self._finishing:
            self._finished.update(self._finishing)
            self._finishing = []
            self.last_progress = now

    def running(self) -> int | None:
        """The trace position of the earliest kernel begun and not finished, or None."""
        pending = self._begun - self._finished
        return self.positions[min(pending)] if pending else None

    def name_at(self, position: int) -> str:
        """The kernel's name as the simulator launched it ("" when it never launched)."""
        try:
            return self._names.get(self.positions.index(position), "")
        except ValueError:
            return ""

    def finished_uid(self, uid: int) -> bool:
        """Whether the kernel of this launch uid (its place in the list, from 1) has finished."""
        return uid - 1 in self._finished

    @property
    def finished_count(self) -> int:
        return len(self._finished)

    def finished_positions(self) -> set[int]:
        return {self.positions[i] for i in self._finished}
