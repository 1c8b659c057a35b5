"""A sim's own `kernelslist.g`: the trace's list cut down to the kernels the sim simulates.

One writer and one rule serve every use: a shard (its range, after warm-up kernels), going on
past a failed kernel (the rest, after warm-up kernels), and a whole trace. The rule: the chosen
kernels in trace order, every memcpy that stands before the last of them where it stood, byte for
byte (so every address the kernels read was copied), and nothing after the last kernel. A memcpy
after the last kernel is not only useless: Accel-Sim runs it with no kernel left and aborts in
its cleanup (`accel-sim.cc:144: ... cleanup(unsigned int): Assertion 'k' failed`).

What a line is follows the one rule Accel-Sim's parser has (`cascade_core.trace_inputs`): a line
starting with `MemcpyHtoD` is a memcpy, one starting with `kernel` a kernel; every other line
Accel-Sim ignores, so the list leaves it out. Accel-Sim reads the kernels a list names relative to
the list's own folder, so the list goes into the sim's scratch directory next to a symbolic link
per kernel trace it names; the trace itself is never copied or changed, and nothing is ever made
outside the scratch directory.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from cascade_core.trace_inputs import TraceFormatError, kernel_names, line_kind, list_lines


def select_lines(lines: Sequence[str], positions: Collection[int]) -> list[str]:
    """The list for the kernels at `positions` (0-based, among the trace's kernel lines): those
    kernels and the memcpys before the last of them, in trace order. Pure."""
    if not positions:
        return []
    last = max(positions)
    out: list[str] = []
    position = 0
    for line in lines:
        kind = line_kind(line)
        if kind == "kernel":
            if position in positions:
                out.append(line)
            if position == last:
                break
            position += 1
        elif kind == "memcpy":
            out.append(line)
    return out


class TraceList:
    """A trace's `kernelslist.g`, read once: its lines and kernel file names."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # bytes as Accel-Sim reads them: no newline translation, any byte kept
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
        try:
            self.names = kernel_names(text)
        except TraceFormatError as exc:
            raise ValueError(f"{path} {exc}") from None
        self.lines = list_lines(text)

    def __len__(self) -> int:
        return len(self.names)

    def write(self, positions: Sequence[int], dest: Path, name: str) -> Path:
        """Write the list of the kernels at `positions` as `dest/name`, with a link per kernel
        trace it names, and return its path. Raises ValueError for a position past the trace's
        last kernel."""
        if positions and max(positions) >= len(self.names):
            raise ValueError(
                f"kernel {max(positions) + 1} is wanted, but {self.path} lists {len(self.names)} kernels"
            )
        dest.mkdir(parents=True, exist_ok=True)
        source = self.path.parent.resolve()
        for position in positions:
            link = dest / self.names[position]
            assert link.parent == dest, link  # kernel_names allows plain file names only
            if not link.is_symlink():
                os.symlink(source / self.names[position], link)
        out = dest / name
        text = "\n".join(select_lines(self.lines, frozenset(positions))) + "\n"
        out.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        return out
