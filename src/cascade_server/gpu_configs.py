"""The GPU configs a run can use: Accel-Sim's tested configs, read once at startup."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from cascade_core.models import GpuConfig
from cascade_core.variants import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ

log = logging.getLogger(__name__)

TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")
ACCELSIM_BINARY = Path("gpu-simulator/bin/release/accel-sim.out")


def accelsim_installed(accelsim_dir: Path | None) -> bool:
    """Whether workers here run the real simulator (else the stand-in replays a recording)."""
    return accelsim_dir is not None and (accelsim_dir / ACCELSIM_BINARY).is_file()


_OPTION = re.compile(r"^\s*-(\S+)\s+(\S+)", re.MULTILINE)
_DIR_ARCH = re.compile(r"^SM(\d+)_")


def arch_from_name(name: str) -> str | None:
    """`SM90_H100` -> sm_90, `SM7_QV100` -> sm_70, `SM100_X` -> sm_100 (the name can mislead;
    the compute capability in the config wins when present)."""
    match = _DIR_ARCH.match(name)
    if not match:
        return None
    digits = match.group(1)
    return f"sm_{digits}0" if len(digits) == 1 else f"sm_{digits}"


def parse_gpgpusim_config(text: str, name: str) -> GpuConfig | None:
    """Read one gpgpusim.config; None when its clock or arch cannot be read."""
    options: dict[str, str] = {}
    for key, value in _OPTION.findall(text):
        options[key] = value  # later options override earlier ones, as in Accel-Sim
    try:
        clock = float(options["gpgpu_clock_domains"].split(":")[0])
    except (KeyError, ValueError):
        return None
    major, minor = (
        options.get("gpgpu_compute_capability_major"),
        options.get("gpgpu_compute_capability_minor"),
    )
    arch: str | None
    if major is not None and minor is not None and major.isdigit() and minor.isdigit():
        arch = f"sm_{major}{minor}"
    else:
        arch = arch_from_name(name)
    # A clock that is not a number a GPU could have (0, 1e400, 1e-320) would make every kernel's
    # time infinite or zero: the variants' bounds (cascade_core.variants) hold for configs too.
    if arch is None or not MIN_CLOCK_MHZ <= clock <= MAX_CLOCK_MHZ:
        return None
    return GpuConfig(name=name, arch=arch, core_clock_mhz=clock)


def scan_gpu_configs(root: Path) -> dict[str, GpuConfig]:
    """Every readable `<root>/gpu-simulator/gpgpu-sim/configs/tested-cfgs/*/gpgpusim.config`, by name."""
    configs: dict[str, GpuConfig] = {}
    for path in sorted((root / TESTED_CFGS).glob("*/gpgpusim.config")):
        try:
            config = parse_gpgpusim_config(path.read_text(errors="replace"), path.parent.name)
        except OSError as exc:
            log.warning("skipping %s: %s", path, exc)
            continue
        if config is None:
            log.warning("skipping %s: no clock or arch", path)
            continue
        configs[config.name] = config
    return dict(sorted(configs.items()))
