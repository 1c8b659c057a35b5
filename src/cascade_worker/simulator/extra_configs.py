"""GPU configs `cascade simulator install` adds beside the simulator's own: Accel-Sim's files for
GPUs the pinned commits parse traces of but ship no config for (the A100, `SM80_A100`).

The files are Accel-Sim's own, byte for byte, from later commits of its public repositories
(../shared/accelsim-configs/README.md has the provenance). Like the sources (sources.py) they are
pinned and checked by sha256: downloaded from raw.githubusercontent.com at the pinned commits, or,
offline, read from a local folder (`--configs DIR`, holding `<config>/<file>`). A tree that already
has a config of the same name keeps its own (a newer checkout given with --framework/--gpgpu-sim
brings its own SM80_A100): only missing configs are added.

Each config goes into the tree the way the worker reads it (gpgpusim.config under
`gpu-simulator/gpgpu-sim/configs/tested-cfgs/<name>/`, trace.config under
`gpu-simulator/configs/tested-cfgs/<name>/`), each folder renamed into place whole, trace.config's
first: the server lists a config by its gpgpusim.config folder, so it never sees half of one."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cascade_core.config_probe import ConfigFiles, probe

from .sources import SourceError, sha256_file

TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")


@dataclass(frozen=True)
class PinnedFile:
    config: str  # the tested-cfgs folder name, such as SM80_A100
    repo: str  # owner/name on GitHub
    commit: str
    repo_path: str  # the file's path in that repository at that commit
    tree_folder: Path  # where its folder goes in an Accel-Sim tree
    sha256: str

    @property
    def name(self) -> str:
        return self.repo_path.rsplit("/", 1)[1]

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.repo_path}"

    def in_tree(self, accelsim: Path) -> Path:
        return accelsim / self.tree_folder / self.config / self.name


EXTRA_CONFIGS: tuple[PinnedFile, ...] = (
    PinnedFile(
        "SM80_A100",
        "accel-sim/gpgpu-sim_distribution",
        "9f767fb80a4fea83c6b767834ee3f76fe9898c50",
        "configs/tested-cfgs/SM80_A100/gpgpusim.config",
        TESTED_CFGS,
        "7de6fcd2833ca3e089ae8d0d26d55bc23acbe659474097799560a05d02551381",
    ),
    PinnedFile(
        "SM80_A100",
        "accel-sim/accel-sim-framework",
        "d907fc849f0f2b501aa4ef10689dd331bb76bf49",
        "gpu-simulator/configs/tested-cfgs/SM80_A100/trace.config",
        TRACE_CFGS,
        "0e7ea93c7463c71e6ad2a6d79b7d52da3bbcde9bc876bb10ab789e4b0e9785be",
    ),
)


def config_names(files: tuple[PinnedFile, ...] = EXTRA_CONFIGS) -> list[str]:
    return list(dict.fromkeys(f.config for f in files))


def missing(accelsim: Path, files: tuple[PinnedFile, ...] = EXTRA_CONFIGS) -> list[str]:
    """The extra configs this tree lacks (it has a config when it has its gpgpusim.config)."""
    return [
        name
        for name in config_names(files)
        if not (accelsim / TESTED_CFGS / name / "gpgpusim.config").is_file()
    ]


def fetch(
    names: list[str], local: Path | None, downloads: Path, files: tuple[PinnedFile, ...] = EXTRA_CONFIGS
) -> dict[PinnedFile, Path]:
    """Each file of the named configs, verified: from `local/<config>/<file>` when a folder is
    given, else downloaded once into `downloads`. SourceError says which file and why."""
    found: dict[PinnedFile, Path] = {}
    for pinned in (f for f in files if f.config in names):
        found[pinned] = _local(pinned, local) if local is not None else _download(pinned, downloads)
    return found


def _check(pinned: PinnedFile, path: Path, where: str) -> None:
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if digest != pinned.sha256:
        raise SourceError(
            f"{where} is not Accel-Sim's {pinned.config}/{pinned.name} ({pinned.repo} at "
            f"{pinned.commit[:8]}): its sha256 is {digest}, not {pinned.sha256}; fetch it again"
        )


def _local(pinned: PinnedFile, local: Path) -> Path:
    path = local.expanduser().absolute() / pinned.config / pinned.name
    if not path.is_file():
        raise SourceError(
            f"--configs {local}: no {pinned.config}/{pinned.name} there (it holds Accel-Sim's config "
            f"files as <config>/<file>: {pinned.url})"
        )
    _check(pinned, path, str(path))
    return path


def _download(pinned: PinnedFile, downloads: Path, timeout: float = 60.0) -> Path:
    target = downloads / "configs" / pinned.commit[:12] / pinned.config / pinned.name
    if target.is_file() and sha256_file(target) == pinned.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(pinned.url, timeout=timeout) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 16)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        partial.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise SourceError(
            f"cannot download {pinned.url}: {reason}. Without GitHub access, pass a folder holding "
            f"Accel-Sim's config files: --configs DIR (with {pinned.config}/{pinned.name})"
        ) from None
    try:
        _check(pinned, partial, pinned.url)
    except SourceError:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target


def place(accelsim: Path, fetched: dict[PinnedFile, Path]) -> list[str]:
    """Put each fetched config into the tree, each folder whole (a rename); returns their names.
    trace.config's folder goes first, gpgpusim.config's last: that one makes the config appear."""
    by_folder: dict[tuple[str, Path], list[tuple[PinnedFile, Path]]] = {}
    for pinned, path in fetched.items():
        by_folder.setdefault((pinned.config, pinned.tree_folder), []).append((pinned, path))
    order = sorted(by_folder, key=lambda key: key[1] == TESTED_CFGS)  # TESTED_CFGS last
    for config, folder in order:
        final = accelsim / folder / config
        staging = final.with_name(f".{config}.adding-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            for pinned, path in by_folder[(config, folder)]:
                shutil.copyfile(path, staging / pinned.name)
            if final.is_dir():  # the tree has the folder but not this config's file (a partial one)
                for item in staging.iterdir():
                    os.replace(item, final / item.name)
            else:
                os.rename(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return list(dict.fromkeys(config for config, _ in order))


def check(accelsim: Path, fetched: dict[PinnedFile, Path]) -> dict[str, str]:
    """Run the built simulator on each fetched config (config_probe): the configs it refuses, with
    its words. A checkout other than the pinned one may have renamed an option."""
    refused: dict[str, str] = {}
    for name in dict.fromkeys(p.config for p in fetched):
        with tempfile.TemporaryDirectory(prefix="cascade-extra-config-") as scratch:
            for pinned, path in fetched.items():
                if pinned.config == name:
                    shutil.copyfile(path, Path(scratch) / pinned.name)
            result = probe(accelsim, ConfigFiles.in_folder(Path(scratch), name))
        if not result.accepted:
            refused[name] = result.complaint
    return refused


def add_checked(accelsim: Path, fetched: dict[PinnedFile, Path]) -> tuple[list[str], dict[str, str]]:
    """The fetched configs the simulator takes, placed into the tree: (added, refused -> why)."""
    refused = check(accelsim, fetched)
    added = place(accelsim, {p: path for p, path in fetched.items() if p.config not in refused})
    return added, refused
