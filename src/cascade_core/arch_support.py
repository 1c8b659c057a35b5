"""Which trace archs a simulator can run, and the straight answer when it cannot. Pure: text in,
words out (the server's 422, `cascade run start`, the terminal UI and the agent prompt say the same).

Accel-Sim picks the opcode map of a kernel trace by its `-binary version` (the SASS the tracer
saw): `trace_driven.cc` compares it with the `*_BINART_VERSION` macros of `ISA_Def/*_opcode.h`
(sic: Accel-Sim spells it so) and, for any other version, prints `unsupported binary version: N`
and exits 0 without simulating. The pinned commit knows 35, 60, 61, 70, 75, 80 and 86; newer
checkouts add more (Hopper's `HOPPER_H100_BINART_VERSION 90`). So the versions are read from the
installed simulator's own sources, never hard-coded here: a newer Accel-Sim brings its own."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# The GPUs of each arch, to name them in a message (what a user knows their trace by).
ARCH_GPUS: dict[str, str] = {
    "sm_35": "Kepler: Tesla K40, K80",
    "sm_37": "Kepler: Tesla K80",
    "sm_50": "Maxwell: GTX 750",
    "sm_52": "Maxwell: GTX 980, TITAN X (Maxwell)",
    "sm_60": "Pascal: Tesla P100",
    "sm_61": "Pascal: GTX 1080, TITAN X (Pascal), Tesla P40",
    "sm_70": "Volta: Tesla V100, TITAN V",
    "sm_72": "Volta: Jetson AGX Xavier",
    "sm_75": "Turing: RTX 2060-2080, Tesla T4",
    "sm_80": "Ampere: A100, A30",
    "sm_86": "Ampere: RTX 3060-3090, A10, A40",
    "sm_87": "Ampere: Jetson AGX Orin",
    "sm_89": "Ada Lovelace: RTX 4060-4090, L4, L40",
    "sm_90": "Hopper: H100, H200, GH200",
    "sm_100": "Blackwell: B200, GB200",
    "sm_120": "Blackwell: RTX 5080, 5090",
}

HOW_TO_UPGRADE = (
    "install a newer Accel-Sim that supports it: `cascade simulator install --framework PATH "
    "--gpgpu-sim PATH` with checkouts of accel-sim-framework and gpgpu-sim_distribution that "
    "have its opcodes (docs/guides/real-accel-sim.md)"
)

# `#define AMPERE_A100_BINART_VERSION 80`; `BIN\w*` takes a later spelling fix (BINARY) too.
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+_BIN\w*_VERSION)\s+(\d+)\b", re.MULTILINE)
_MACRO = re.compile(r"\b(\w+_BIN\w*_VERSION)\b")


def arch_of_version(version: int) -> str:
    """`-binary version = 86` -> sm_86 (the tracer writes the compute capability as one number)."""
    return f"sm_{version}"


def gpus_of(arch: str) -> str:
    """`sm_90` -> `Hopper: H100, H200, GH200`, or the arch itself when it is not one we know."""
    return ARCH_GPUS.get(arch, arch)


def binary_versions(headers: Mapping[str, str], dispatch: str | None) -> set[int]:
    """The binary versions Accel-Sim's trace parser takes: the `*_BINART_VERSION` macros defined
    in `ISA_Def/*.h` (`headers`: name -> text) that `trace_driven.cc` (`dispatch`) compares a
    kernel's version with; all of them defined when the dispatch file is missing."""
    defined: dict[str, int] = {}
    for text in headers.values():
        for name, value in _DEFINE.findall(text):
            defined[name] = int(value)
    if dispatch is None:
        return set(defined.values())
    used = set(_MACRO.findall(dispatch))
    return {value for name, value in defined.items() if name in used}


def sort_archs(archs: Iterable[str]) -> list[str]:
    """sm_35 before sm_100: by number, not by text."""

    def number(arch: str) -> tuple[int, str]:
        digits = arch.removeprefix("sm_")
        return (int(digits), "") if digits.isascii() and digits.isdigit() else (1 << 30, arch)

    return sorted(set(archs), key=number)


def unsupported_arch(arch: str, supported: Iterable[str] | None) -> bool:
    """The simulator cannot run traces of `arch` (None: it is not known what it runs, so no)."""
    if supported is None or not arch or arch == "unknown":
        return False
    return arch not in set(supported)


def unsupported_arch_problem(
    arch: str, supported: Iterable[str] | None, trace_id: str | None = None
) -> str | None:
    """Why no config can simulate a trace of `arch` on this simulator, and what to do; None when
    it can (or when it is not known what the simulator runs). One sentence, for a 422 and a UI."""
    if supported is None or not unsupported_arch(arch, supported):
        return None
    knows = ", ".join(sort_archs(supported)) or "none"
    subject = f"trace {trace_id} is {arch}" if trace_id else f"{arch}"
    return (
        f"{subject} ({gpus_of(arch)}), which the installed Accel-Sim cannot simulate: its trace parser has "
        f"no opcodes for binary version {arch.removeprefix('sm_')} (it would stop at `unsupported binary "
        f"version`; it knows {knows}). To simulate it, {HOW_TO_UPGRADE}"
    )
