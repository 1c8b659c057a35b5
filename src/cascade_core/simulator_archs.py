"""The trace archs an Accel-Sim tree can simulate, read from its own sources (a build made by
`cascade simulator install` keeps them, and so does a checkout CASCADE_ACCELSIM_DIR names). The
rule is `arch_support.binary_versions`; this module only finds and reads the files."""

from __future__ import annotations

from pathlib import Path

from .arch_support import arch_of_version, binary_versions, sort_archs

ISA_DEF = Path("gpu-simulator/ISA_Def")
DISPATCH = Path("gpu-simulator/trace-driven/trace_driven.cc")
MAX_SOURCE_BYTES = 4 << 20  # an opcode header is tens of KB; never read a stray huge file whole


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return path.read_text(errors="replace")
    except OSError:
        return None


def trace_archs(accelsim: Path) -> list[str] | None:
    """`["sm_35", ..., "sm_86"]` for the pinned build; None when the tree has no readable opcode
    headers (then nothing is claimed about what it runs)."""
    try:
        names = sorted((accelsim / ISA_DEF).glob("*.h"))
    except OSError:
        return None
    headers = {path.name: text for path in names if (text := _read(path)) is not None}
    if not headers:
        return None
    versions = binary_versions(headers, _read(accelsim / DISPATCH))
    return sort_archs(arch_of_version(v) for v in versions) if versions else None
