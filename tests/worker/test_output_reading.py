"""A line the worker fails to handle must not stop its reading of the simulator's output: a
reader that stopped left the simulator blocked on a full pipe and the sim running for ever (an
attacker found it through a kernel name holding ` uid: ²`)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from cascade_worker.simulator_process import SimulatorProcess

pytestmark = pytest.mark.timeout(60)


async def test_the_output_is_read_to_its_end_whatever_a_line_does(tmp_path):
    # far more than a pipe holds (64 KiB), so a reader that stopped would block the writer
    writer = "import sys\nfor i in range(100_000):\n    print('line', i)\n"
    proc = SimulatorProcess([sys.executable, "-c", writer], tmp_path, dict(os.environ), kill_grace=5)
    await proc.start()
    seen = []

    def on_lines(lines: list[str]) -> None:
        seen.extend(lines)
        if len(seen) > 10:
            raise ValueError("invalid literal for int() with base 10: '²'")

    await asyncio.wait_for(proc.pump(on_lines), 30)
    assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert seen[-1] == "line 99999"
