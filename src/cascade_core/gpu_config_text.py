"""What a `gpgpusim.config` says about its GPU: its core clock and the arch of the traces it runs.
Pure: text in, a GpuConfig out (the server's config scan and `cascade configs add`'s check).

The arch is the config's compute capability (`-gpgpu_compute_capability_major/minor`) when it
sets one, else the arch given (`cascade configs add --arch`), else its name's `SM<N>_` prefix (the
name can mislead: SM6_TITANX is sm_61). The clock is the first value of `-gpgpu_clock_domains`."""

from __future__ import annotations

import re

from .models import GpuConfig
from .variants import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ

_OPTION = re.compile(r"^\s*-(\S+)\s+(\S+)", re.MULTILINE)
_NAME_ARCH = re.compile(r"^SM(\d+)_")


def arch_from_name(name: str) -> str | None:
    """`SM90_H100` -> sm_90, `SM7_QV100` -> sm_70, `SM100_X` -> sm_100."""
    match = _NAME_ARCH.match(name)
    if not match:
        return None
    digits = match.group(1)
    return f"sm_{digits}0" if len(digits) == 1 else f"sm_{digits}"


def config_options(text: str) -> dict[str, str]:
    """`-name value` lines, the name without its dash (later lines win, as in Accel-Sim)."""
    return dict(_OPTION.findall(text))


def compute_capability_arch(options: dict[str, str]) -> str | None:
    major = options.get("gpgpu_compute_capability_major")
    minor = options.get("gpgpu_compute_capability_minor")
    if (
        major is not None
        and minor is not None
        and major.isascii()
        and major.isdigit()
        and minor.isascii()
        and minor.isdigit()
    ):
        return f"sm_{major}{minor}"
    return None


def core_clock(options: dict[str, str]) -> float | None:
    try:
        clock = float(options["gpgpu_clock_domains"].split(":")[0])
    except (KeyError, ValueError):
        return None
    # A clock no GPU could have (0, 1e400, 1e-320) would make every kernel's time infinite or
    # zero: the variants' bounds (cascade_core.variants) hold for configs too.
    return clock if MIN_CLOCK_MHZ <= clock <= MAX_CLOCK_MHZ else None


def parse_gpgpusim_config(
    text: str, name: str, arch: str | None = None, added: bool = False, power_model: bool = False
) -> GpuConfig | None:
    """Read one gpgpusim.config; None when its clock or arch cannot be read."""
    options = config_options(text)
    clock = core_clock(options)
    found = compute_capability_arch(options) or arch or arch_from_name(name)
    if found is None or clock is None:
        return None
    return GpuConfig(name=name, arch=found, core_clock_mhz=clock, added=added, power_model=power_model)
