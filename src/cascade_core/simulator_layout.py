"""Where an installed Accel-Sim lives, and what its manifest says. Pure: paths and JSON only.

An install root (the data directory's `simulator/`, or `--prefix DIR` on shared storage) holds:

    builds/<key>/accel-sim/     an Accel-Sim tree with gpgpu-sim inside, built (CASCADE_ACCELSIM_DIR-like)
    builds/<key>/cuda/          the CUDA 11.8 headers, ptxas and the stand-in nvcc it was built with
    builds/<key>/manifest.json  commits, sources, build time, smoke result
    staging/<key>-<pid>/        a build in progress; renamed to builds/<key> only after its smoke run passed
    logs/build-<time>.log       every build's full output

`<key>` names the sources (their sha256 or content hash), so a second install of the same
sources finds the finished build. The data directory's `simulator/current` is a symlink to the
build the server uses (in the data directory's own root or under a --prefix); it is replaced
atomically, so a reader sees the old build or the new one, never half of either.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cascade_core.models import SimulatorInfo
from cascade_core.simulator_archs import trace_archs

SIMULATOR_DIR = "simulator"
CURRENT = "current"
MANIFEST = "manifest.json"
ACCELSIM = "accel-sim"
BINARY = Path("gpu-simulator/bin/release/accel-sim.out")
TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
# The build writes its libcudart.so here (gcc-<version>/cuda-<version>/release under lib/).
LIB_ROOT = Path("gpu-simulator/gpgpu-sim/lib")
# Bumped when the way Cascade builds changes, so an older build is not taken for a current one.
RECIPE = 1


def simulator_root(data_dir: Path) -> Path:
    return data_dir / SIMULATOR_DIR


def current_link(data_dir: Path) -> Path:
    return simulator_root(data_dir) / CURRENT


@dataclass(frozen=True)
class InstallRoot:
    """Where builds go: the data directory's `simulator/` or a `--prefix`."""

    path: Path

    @property
    def builds(self) -> Path:
        return self.path / "builds"

    @property
    def staging(self) -> Path:
        return self.path / "staging"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    def build(self, key: str) -> Path:
        return self.builds / key

    def staging_for(self, key: str, pid: int) -> Path:
        return self.staging / f"{key}-{pid}"


def accelsim_dir(build: Path) -> Path:
    return build / ACCELSIM


def binary(build: Path) -> Path:
    return accelsim_dir(build) / BINARY


def lib_dir_of(accelsim: Path) -> Path | None:
    """The folder holding the simulator's own libcudart.so (the first, in name order), or None.
    Its name depends on the compiler and CUDA versions the build saw, so it is looked up."""
    root = accelsim / LIB_ROOT
    try:
        found = sorted(root.glob("*/*/release/libcudart.so*"))
    except OSError:
        return None
    return found[0].parent if found else None


@dataclass
class Manifest:
    """`manifest.json` of one build: what it was built from, when, and whether its smoke run passed."""

    key: str
    framework_commit: str | None
    gpgpu_sim_commit: str | None
    framework_source: str
    gpgpu_sim_source: str
    built_at: str  # ISO 8601, UTC
    build_seconds: float
    smoke_passed: bool
    smoke_detail: str = ""
    recipe: int = RECIPE
    compiler: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


class ManifestError(Exception):
    pass


def parse_manifest(text: str) -> Manifest:
    """A manifest from its JSON; ManifestError saying what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError("not a JSON object")
    known = set(Manifest.__dataclass_fields__)
    try:
        return Manifest(**{k: v for k, v in data.items() if k in known})
    except TypeError as exc:
        raise ManifestError(str(exc)) from None


def read_manifest(build: Path) -> Manifest | None:
    try:
        return parse_manifest((build / MANIFEST).read_text())
    except (OSError, ManifestError):
        return None


def is_complete(build: Path) -> bool:
    """A finished build: its binary is there and its manifest says the smoke run passed."""
    manifest = read_manifest(build)
    return (
        manifest is not None
        and manifest.smoke_passed
        and manifest.recipe == RECIPE
        and binary(build).is_file()
    )


def installed_build(data_dir: Path) -> Path | None:
    """The build `simulator/current` points at, resolved, when it is complete; else None."""
    link = current_link(data_dir)
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return target if is_complete(target) else None


def installed_accelsim(data_dir: Path) -> Path | None:
    """The Accel-Sim tree the server uses when CASCADE_ACCELSIM_DIR is not set, or None."""
    build = installed_build(data_dir)
    return accelsim_dir(build) if build is not None else None


def build_of(accelsim: Path) -> Path | None:
    """The build folder holding this Accel-Sim tree, when it is one of ours (has a manifest)."""
    parent = accelsim.parent
    return parent if accelsim.name == ACCELSIM and (parent / MANIFEST).is_file() else None


class CurrentLinkError(Exception):
    """`simulator/current` cannot be made to point at a build; the message is one line."""


def point_current(data_dir: Path, build: Path) -> None:
    """Make `simulator/current` point at `build`, atomically (a new link renamed over the old).
    CurrentLinkError when it cannot (a directory in its place, which is never removed: it is not
    Cascade's); the new link is never left behind."""
    link = current_link(data_dir)
    link.parent.mkdir(parents=True, exist_ok=True)
    temporary = link.with_name(f".{CURRENT}-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(build.resolve())
    try:
        os.replace(temporary, link)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        if link.is_dir() and not link.is_symlink():
            raise CurrentLinkError(
                f"{link} is a directory, not the link to the build Cascade keeps there: "
                f"move it away, then install again (the build is ready in {build})"
            ) from None
        raise CurrentLinkError(f"cannot point {link} at {build}: {exc.strerror or exc}") from None


_KEY = re.compile(r"^[0-9a-z-]{4,80}$")


def valid_key(key: str) -> bool:
    return bool(_KEY.match(key))


def with_library_dir(env: dict[str, str], lib_dir: Path | None) -> dict[str, str]:
    """`env` with the simulator's own library folder first on LD_LIBRARY_PATH: `accel-sim.out`
    links `libcudart.so` by name, and where ld.so.conf lists another CUDA's libraries the loader
    would find that one first and the simulator dies at start (status 127, undefined symbol)."""
    if lib_dir is None:
        return env
    rest = [
        part for part in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if part and part != str(lib_dir)
    ]
    return {**env, "LD_LIBRARY_PATH": os.pathsep.join([str(lib_dir), *rest])}


INSTALL_HINT = "run `cascade simulator install` to build the real Accel-Sim (about 5 minutes on 2 cores)"


def count_configs(accelsim: Path) -> int:
    try:
        return sum(1 for _ in (accelsim / TESTED_CFGS).glob("*/gpgpusim.config"))
    except OSError:
        return 0


def describe(data_dir: Path, accelsim_dir_setting: Path | None, stand_in_configs: int = 0) -> SimulatorInfo:
    """Which simulator a server on `data_dir` runs: CASCADE_ACCELSIM_DIR when it holds a build,
    else the installed build `simulator/current` points at, else the stand-in."""
    if accelsim_dir_setting is not None:
        if (accelsim_dir_setting / BINARY).is_file():
            ours = build_of(accelsim_dir_setting)
            manifest = read_manifest(ours) if ours else None
            return _info("accelsim-dir", accelsim_dir_setting, manifest)
        return SimulatorInfo(
            kind="stand-in",
            configs=stand_in_configs,
            problem=f"CASCADE_ACCELSIM_DIR={accelsim_dir_setting} has no built {BINARY}",
            hint="build it there, or unset CASCADE_ACCELSIM_DIR and " + INSTALL_HINT.removeprefix("run "),
        )
    build = installed_build(data_dir)
    if build is not None:
        return _info("installed", accelsim_dir(build), read_manifest(build))
    return SimulatorInfo(kind="stand-in", configs=stand_in_configs, hint=INSTALL_HINT)


def _info(kind, accelsim: Path, manifest: Manifest | None) -> SimulatorInfo:
    return SimulatorInfo(
        kind=kind,
        path=str(accelsim),
        configs=count_configs(accelsim),
        archs=trace_archs(accelsim),
        framework_commit=manifest.framework_commit if manifest else None,
        gpgpu_sim_commit=manifest.gpgpu_sim_commit if manifest else None,
        built_at=manifest.built_at if manifest else None,
        smoke_passed=manifest.smoke_passed if manifest else None,
        smoke_detail=manifest.smoke_detail if manifest else None,
    )
