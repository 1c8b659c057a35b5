"""What the terminal UI says of the simulator the server uses (`simulator` in GET /api/launcher),
and how it runs `cascade simulator install`. Pure: no Textual, no I/O."""

from __future__ import annotations

import re
import sys
from urllib.parse import urlsplit

from cascade_core.models import SimulatorInfo

INSTALL_KEY = "A"
_PROGRESS = re.compile(r"^progress: (\d+)% \((\d+)/(\d+) objects\) (\S+)$")


def simulator_line(info: SimulatorInfo | None, variants: bool = False, power: bool = False) -> str:
    """One line for the New run screen; empty when the server does not say. `variants`: the
    form has variants, which the stand-in cannot honour (the server refuses them at launch), so
    the line says so while they are built, not only when the launch fails; `power` likewise (the
    stand-in's recordings have no power)."""
    if info is None:
        return ""
    if info.kind == "stand-in":
        if variants:
            return (
                "⚠ Variants need the real Accel-Sim: the stand-in replays recordings and cannot "
                f"apply simulator options, so this run would be refused. Press {INSTALL_KEY} to install it."
            )
        if power:
            return (
                "⚠ Power needs the real Accel-Sim: the stand-in replays recordings, which have no "
                f"power, so this run would be refused. Press {INSTALL_KEY} to install it."
            )
        return (
            f"Simulator: the stand-in (recorded numbers, not this trace). Press {INSTALL_KEY} to "
            "install the real Accel-Sim."
        )
    source = "installed" if info.kind == "installed" else "CASCADE_ACCELSIM_DIR"
    line = f"Simulator: real Accel-Sim ({source}, {info.configs} configs)"
    if info.problem:
        line += f". ⚠ {info.problem}"
    return line


def status_lines(info: SimulatorInfo | None) -> list[str]:
    """The simulator screen's text."""
    if info is None:
        return ["The server does not say which simulator it uses (an older server)."]
    if info.kind == "stand-in":
        # One line a paragraph: the screen wraps them to its width (a break inside a sentence
        # would leave a word alone on a line at 80 columns).
        lines = [
            "Sims run the stand-in: it replays recorded Accel-Sim logs, so their numbers describe "
            "the recording, not your trace.",
            "",
            "Press i to build the real Accel-Sim here (about 5 minutes on 2 cores; no CUDA needed), "
            "or run `cascade simulator install` in a shell on the server's host.",
        ]
    else:
        source = (
            "installed by `cascade simulator install`"
            if info.kind == "installed"
            else "the checkout CASCADE_ACCELSIM_DIR names"
        )
        smoke = {True: "passed", False: "FAILED", None: "not run (not built by Cascade)"}[info.smoke_passed]
        lines = [
            f"Sims run real Accel-Sim, {source}.",
            "",
            f"path       {info.path}",
            f"commits    accel-sim-framework {info.framework_commit or '?'}",
            f"           gpgpu-sim {info.gpgpu_sim_commit or '?'}",
            f"built      {info.built_at or '?'}",
            f"configs    {info.configs}",
            f"smoke run  {smoke}" + (f" ({info.smoke_detail})" if info.smoke_detail else ""),
        ]
    if info.problem:
        lines += ["", f"⚠ {info.problem}"]
    return lines


def parse_progress(line: str) -> tuple[float, str] | None:
    """`progress: 45% (68/150 objects) 1m26s` -> (0.45, "68/150 objects, 1m26s")."""
    match = _PROGRESS.match(line.strip())
    if not match:
        return None
    return int(match.group(1)) / 100, f"{match.group(2)}/{match.group(3)} objects, {match.group(4)}"


def install_argv(python: str = sys.executable) -> list[str]:
    return [python, "-m", "cascade_tui.cli", "simulator", "install"]


def is_local(url: str) -> bool:
    """The install runs on this host: only useful when the server does too."""
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")
