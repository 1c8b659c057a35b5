"""The GPU configs of an Accel-Sim tree: its tested configs (`simulator_watch.py` reads them again
when the simulator changes; configs added with `cascade configs add` are `added_configs.py`)."""

from __future__ import annotations

import logging
from pathlib import Path

from cascade_core import power_report
from cascade_core.gpu_config_text import arch_from_name, parse_gpgpusim_config
from cascade_core.models import GpuConfig

__all__ = ["arch_from_name", "parse_gpgpusim_config", "scan_gpu_configs"]

log = logging.getLogger(__name__)

TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")
ACCELSIM_BINARY = Path("gpu-simulator/bin/release/accel-sim.out")


def accelsim_installed(accelsim_dir: Path | None) -> bool:
    """Whether workers here run the real simulator (else the stand-in replays a recording)."""
    return accelsim_dir is not None and (accelsim_dir / ACCELSIM_BINARY).is_file()


def scan_gpu_configs(root: Path) -> dict[str, GpuConfig]:
    """Every readable `<root>/gpu-simulator/gpgpu-sim/configs/tested-cfgs/*/gpgpusim.config`, by name."""
    configs: dict[str, GpuConfig] = {}
    for path in sorted((root / TESTED_CFGS).glob("*/gpgpusim.config")):
        try:
            config = parse_gpgpusim_config(
                path.read_text(errors="replace"),
                path.parent.name,
                power_model=(path.parent / power_report.MODEL_FILE).is_file(),
            )
        except OSError as exc:
            log.warning("skipping %s: %s", path, exc)
            continue
        if config is None:
            log.warning("skipping %s: no clock or arch", path)
            continue
        configs[config.name] = config
    return dict(sorted(configs.items()))
