"""Real mode: prepare a scratch directory for `accel-sim.out` and build its command line.

The config's files are copied into the simulator's working directory because configs name some
of them (`*.icnt`, AccelWattch `*.xml`/`*.csv`) by relative path, as Accel-Sim's own
run_simulations does (reference/accelsim-formats.md section 4).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

BINARY = Path("gpu-simulator/bin/release/accel-sim.out")
TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")
COPIED_PATTERNS = ("*.icnt", "*.xml", "*.csv")


class SetupError(Exception):
    """The sim cannot start; the message is the short reason the sim fails with."""


def binary(accelsim_dir: Path) -> Path:
    return accelsim_dir / BINARY


def is_installed(accelsim_dir: Path | None) -> bool:
    return accelsim_dir is not None and binary(accelsim_dir).is_file()


def kernelslist(trace_dir: Path) -> Path:
    return trace_dir / "traces" / "kernelslist.g"


def prepare(
    accelsim_dir: Path,
    gpu_config: str,
    trace_dir: Path | None,
    run_dir: Path,
    options: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
) -> list[str]:
    """Copy the config into `run_dir` and return the argv to run there: the configs, then the
    variant's `options` (later options override the configs', as in Accel-Sim). `config_dir`: a
    config that is not the simulator's own (`cascade configs add`), all its files in one folder."""
    trace_config = accelsim_dir / TRACE_CFGS / gpu_config / "trace.config"
    if config_dir is not None:
        trace_config = config_dir / "trace.config"
    config_dir = config_dir or accelsim_dir / TESTED_CFGS / gpu_config
    if not (config_dir / "gpgpusim.config").is_file():
        raise SetupError(f"no GPU config {gpu_config} in {config_dir.parent}")
    if trace_dir is None:
        raise SetupError("no trace directory (set CASCADE_TRACE_DIR or --trace-dir)")
    commands = kernelslist(trace_dir)
    if not commands.is_file():
        raise SetupError(f"trace has no traces/kernelslist.g under {trace_dir}")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config_dir / "gpgpusim.config", run_dir / "gpgpusim.config")
    for pattern in COPIED_PATTERNS:
        for extra in config_dir.glob(pattern):
            shutil.copyfile(extra, run_dir / extra.name)
    argv = [str(binary(accelsim_dir)), "-trace", str(commands), "-config", "./gpgpusim.config"]
    if trace_config.is_file():  # older configs (SM2_GTX480) have none
        shutil.copyfile(trace_config, run_dir / "trace.config")
        argv += ["-config", "./trace.config"]
    for name, value in (options or {}).items():
        argv += [name, value]
    return argv
