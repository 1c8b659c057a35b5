"""Which simulator new sims run, looked up at each use: CASCADE_ACCELSIM_DIR when set, else the
build `cascade simulator install` made for this data directory, else the stand-in. Looked up
again each time (a symlink and a manifest: cheap), so an install made while the server runs is
used from the next run on, with its GPU configs."""

from __future__ import annotations

import logging
from pathlib import Path

from cascade_core import simulator_layout as layout
from cascade_core.models import GpuConfig, SimulatorInfo

from .gpu_configs import accelsim_installed, scan_gpu_configs
from .settings import Settings

log = logging.getLogger(__name__)


class SimulatorWatch:
    def __init__(self, settings: Settings, configs: dict[str, GpuConfig]) -> None:
        self.settings = settings
        # The app's one configs dict (GET /api/gpu-configs and run validation read it): updated
        # in place when the simulator changes.
        self.configs = configs
        self._root: Path = settings.configs_root
        self.refresh()

    def accelsim_dir(self) -> Path | None:
        """The Accel-Sim tree workers get as CASCADE_ACCELSIM_DIR, or None (the stand-in)."""
        if self.settings.accelsim_dir is not None:
            return self.settings.accelsim_dir
        return layout.installed_accelsim(self.settings.data_dir)

    def real(self) -> bool:
        return accelsim_installed(self.accelsim_dir())

    def refresh(self) -> Path | None:
        """The current Accel-Sim tree; rescans the configs when it is not the one they came from."""
        accelsim = self.accelsim_dir()
        root = accelsim if accelsim is not None else self.settings.samples_dir / "accelsim"
        if root != self._root:
            configs = scan_gpu_configs(root)
            self.configs.clear()
            self.configs.update(configs)
            self._root = root
            log.info("simulator now %s: %d GPU configs", root, len(configs))
        return accelsim

    def shared_roots(self) -> list[Path]:
        return [Path(p) for p in self.settings.slurm_shared_roots.split(":") if p.strip()]

    def slurm_problem(self) -> str | None:
        """Why Slurm's nodes may not see the real simulator, or None. The rule: with the slurm
        launcher and CASCADE_SLURM_LOCAL unset, the simulator must be under one of
        CASCADE_SLURM_SHARED_ROOTS (the folders every node mounts at the same path); without that
        setting, only an explicit CASCADE_ACCELSIM_DIR is trusted, never a build in the data dir."""
        settings = self.settings
        accelsim = self.accelsim_dir()
        if settings.launcher != "slurm" or settings.slurm_local or not accelsim_installed(accelsim):
            return None
        assert accelsim is not None
        roots = self.shared_roots()
        where = accelsim.resolve()
        if any(where.is_relative_to(root.resolve()) for root in roots):
            return None
        if not roots and settings.accelsim_dir is not None:
            return None
        listed = (
            f"not under CASCADE_SLURM_SHARED_ROOTS ({settings.slurm_shared_roots})"
            if roots
            else "CASCADE_SLURM_SHARED_ROOTS does not list a folder the nodes share"
        )
        return (
            f"the slurm launcher will not run the simulator at {where}: compute nodes may not see it "
            f"({listed}). Install it on shared storage with `cascade simulator install --prefix "
            f"/shared/dir`, list that storage in CASCADE_SLURM_SHARED_ROOTS, or set CASCADE_SLURM_LOCAL=1 "
            f"if the cluster is this host"
        )

    def info(self) -> SimulatorInfo:
        self.refresh()
        info = layout.describe(
            self.settings.data_dir, self.settings.accelsim_dir, stand_in_configs=len(self.configs)
        )
        problem = self.slurm_problem()
        return info.model_copy(update={"problem": problem}) if problem else info
