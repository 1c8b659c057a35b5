"""Which simulator new sims run, and the GPU configs they can use, looked up at each use:
CASCADE_ACCELSIM_DIR when set, else the build `cascade simulator install` made for this data
directory, else the stand-in. Looked up again each time (a symlink and a manifest: cheap), so an
install made while the server runs is used from the next run on, with its GPU configs.

The configs are the simulator's tested configs (or, for the stand-in, the samples') plus the ones
added with `cascade configs add` (`added_configs.py`), which stay whatever the simulator is. An
added config shadows a simulator config of the same name (it can only get one by a later build):
runs that named it keep meaning the config its user added."""

from __future__ import annotations

import logging
from pathlib import Path

from cascade_core import simulator_layout as layout
from cascade_core.arch_support import unsupported_arch_problem
from cascade_core.config_probe import ConfigFiles
from cascade_core.models import GpuConfig, SimulatorInfo
from cascade_core.simulator_archs import trace_archs

from .added_configs import AddedConfigs
from .gpu_configs import accelsim_installed, scan_gpu_configs
from .settings import Settings

log = logging.getLogger(__name__)


class SimulatorWatch:
    def __init__(self, settings: Settings, configs: dict[str, GpuConfig]) -> None:
        self.settings = settings
        # The app's one configs dict (GET /api/gpu-configs and run validation read it): updated
        # in place when the simulator or the added configs change.
        self.configs = configs
        self.added = AddedConfigs(settings.data_dir)
        self._tree: dict[str, GpuConfig] = dict(configs)
        self._added: dict[str, GpuConfig] = {}
        self._root: Path = settings.configs_root
        self._archs: tuple[Path | None, list[str] | None] = (None, None)
        self.added.clear_leftovers()
        self.reload_added()
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
            self._tree = scan_gpu_configs(root)
            self._root = root
            log.info("simulator now %s: %d GPU configs", root, len(self._tree))
            self._merge()
        return accelsim

    def reload_added(self) -> None:
        """Read the added configs again (after one is added or removed)."""
        self._added = self.added.scan()
        self._merge()

    def _merge(self) -> None:
        shadowed = sorted(set(self._tree) & set(self._added))
        if shadowed:
            log.warning("added GPU configs shadow the simulator's of the same name: %s", ", ".join(shadowed))
        merged = {**self._tree, **self._added}
        self.configs.clear()
        self.configs.update(sorted(merged.items()))

    def is_added(self, name: str) -> bool:
        return name in self._added

    def in_simulator(self, name: str) -> bool:
        return name in self._tree

    def added_dir(self, name: str) -> Path | None:
        """Where an added config's files are (the worker gets it as CASCADE_GPU_CONFIG_DIR)."""
        return self.added.folder(name) if name in self._added else None

    def locate(self, name: str) -> ConfigFiles | None:
        """Where config `name`'s files are, or None when there is no such config."""
        if name in self._added:
            return self.added.files(name)
        if name in self._tree:
            return ConfigFiles.in_simulator(self._root, name)
        return None

    def trace_archs(self) -> list[str] | None:
        """The trace archs the real simulator can run (from its sources), None for the stand-in
        or when its sources do not say; read once per simulator tree."""
        accelsim = self.accelsim_dir() if self.real() else None
        if self._archs[0] != accelsim:
            self._archs = (accelsim, trace_archs(accelsim) if accelsim is not None else None)
        return self._archs[1]

    def arch_problem(self, arch: str, trace_id: str | None = None) -> str | None:
        """Why no config can simulate a trace of `arch` here (the straight answer), or None."""
        return unsupported_arch_problem(arch, self.trace_archs(), trace_id)

    def shared_roots(self) -> list[Path]:
        return [Path(p) for p in self.settings.slurm_shared_roots.split(":") if p.strip()]

    def slurm_problem(self) -> str | None:
        """Why Slurm's nodes may not see the real simulator, or None. The rule: with the slurm
        launcher and CASCADE_SLURM_LOCAL unset, the simulator must be under one of
        CASCADE_SLURM_SHARED_ROOTS (the folders every node mounts at the same path); without that
        setting, only an explicit CASCADE_ACCELSIM_DIR is trusted, never a build in the data dir.
        (Added configs need no such rule: a worker that cannot see them fetches them by name.)"""
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
