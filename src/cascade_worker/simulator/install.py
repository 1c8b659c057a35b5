"""`cascade simulator install`, the steps: reuse a finished build of the same sources, or check
the build packages, fetch and unpack the sources, make the private CUDA folder, make, smoke-run,
and only then rename the staging folder into place and point the data directory at it. Either
way the GPU configs the simulator lacks (extra_configs.py: the A100) are added, checked by the
simulator itself: a finished build gets the missing ones without a rebuild.

Anything that stops the build (an error, a full disk, Ctrl+C) removes the staging folder, so the
server never sees a half-built simulator: it only follows `simulator/current`, which moves last.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import platform
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cascade_core import simulator_layout as layout

from . import build as make
from . import cuda_wheels, deps, extra_configs, smoke, sources
from .report import Reporter

INTERMEDIATES = (Path("gpu-simulator/gpgpu-sim/build"), Path("gpu-simulator/build"))


class InstallError(Exception):
    """The install stopped; the message (and `details`, one line each) say why."""

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.details = details or []


@dataclass(frozen=True)
class Request:
    data_dir: Path
    prefix: Path | None = None
    framework: Path | None = None
    gpgpu_sim: Path | None = None
    cuda_wheels: Path | None = None
    install_deps: bool = False
    jobs: int = os.cpu_count() or 1
    rebuild: bool = False
    configs: Path | None = None  # Accel-Sim's extra config files, offline (default: downloaded)

    @property
    def root(self) -> layout.InstallRoot:
        return layout.InstallRoot((self.prefix or layout.simulator_root(self.data_dir)).absolute())


def build_key(framework: sources.Source, gpgpu_sim: sources.Source) -> str:
    """Names a build by its sources and Cascade's recipe: same sources, same build."""
    digest = hashlib.sha256(f"{framework.ident}\n{gpgpu_sim.ident}\n{layout.RECIPE}".encode()).hexdigest()
    commits = "-".join((s.commit or "local")[:8] for s in (framework, gpgpu_sim))
    return f"{commits}-{digest[:12]}"


def install(request: Request, report: Reporter) -> Path:
    """The finished build's folder; InstallError (or KeyboardInterrupt) otherwise. One install
    at a time per root: a second one waits, then finds the first one's build."""
    root = request.root
    try:
        root.path.mkdir(parents=True, exist_ok=True)
        lock = open(root.path / ".install.lock", "w")
    except OSError as exc:
        raise InstallError(f"cannot create {root.path}: {exc.strerror or exc}") from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report.step(f"another install is running in {root.path}; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(request, report)


def _install(request: Request, report: Reporter) -> Path:
    try:
        framework = sources.resolve(sources.FRAMEWORK, request.framework)
        gpgpu_sim = sources.resolve(sources.GPGPU_SIM, request.gpgpu_sim)
    except sources.SourceError as exc:
        raise InstallError(str(exc)) from None
    root = request.root
    key = build_key(framework, gpgpu_sim)
    final = root.build(key)
    env = cuda_wheels.cuda_env(final / "cuda")
    if not request.rebuild and layout.is_complete(final):
        report.step(f"found the finished build of these sources: {final}")
        result = smoke.run_smoke(layout.accelsim_dir(final), env)
        if result.passed:
            report.step(f"smoke run passed ({result.detail}, {result.seconds:.1f} s)")
            accelsim = layout.accelsim_dir(final)
            if names := extra_configs.missing(accelsim):
                added = _add_configs(accelsim, _fetch_configs(request, names, report), report)
                _record_configs(final, added)
            _point_current(request, final)
            return final
        report.step(f"the finished build fails its smoke run now ({result.detail}): building it again")
    missing = deps.missing()
    if missing:
        _install_deps(missing, request, report)
    try:
        root.logs.mkdir(exist_ok=True)
    except OSError as exc:
        raise InstallError(f"cannot create {root.path}: {exc.strerror or exc}") from None
    log_path = root.logs / f"build-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{key}.log"
    staging = root.staging_for(key, os.getpid())
    started = time.monotonic()
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        built = _build(request, framework, gpgpu_sim, key, staging, log_path, started, report)
        _move_into_place(built, final)
    except OSError as exc:
        raise InstallError(_os_problem(exc, root.path), [f"full log: {log_path}"]) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_if_empty(root.staging)
    _point_current(request, final)
    return final


def _point_current(request: Request, final: Path) -> None:
    try:
        layout.point_current(request.data_dir, final)
    except layout.CurrentLinkError as exc:
        raise InstallError(str(exc)) from None


def _build(
    request: Request,
    framework: sources.Source,
    gpgpu_sim: sources.Source,
    key: str,
    staging: Path,
    log_path: Path,
    started: float,
    report: Reporter,
) -> Path:
    accelsim = layout.accelsim_dir(staging)
    try:
        report.step(f"sources: {framework.describe()} and {gpgpu_sim.describe()}")
        downloads = request.root.path / "downloads"
        sources.unpack(framework, sources.local_path(framework, downloads), accelsim)
        simulator = accelsim / "gpu-simulator" / "gpgpu-sim"
        shutil.rmtree(simulator, ignore_errors=True)
        sources.unpack(gpgpu_sim, sources.local_path(gpgpu_sim, downloads), simulator)
        # An empty pybind11 folder stops setup_environment.sh cloning it (not needed to build).
        (accelsim / "gpu-simulator" / "extern" / "pybind11").mkdir(parents=True, exist_ok=True)
        # before the 5-minute compile: a config that cannot be fetched stops the install now
        fetched = _fetch_configs(request, extra_configs.missing(accelsim), report)
        report.step("CUDA 11.8 headers and ptxas from PyPI wheels (no system CUDA is used)")
        wheels = cuda_wheels.reuse_or_download(request.root.path / "wheels", request.cuda_wheels)
        cuda_wheels.make_cuda_dir(wheels, staging / "cuda")
    except (sources.SourceError, cuda_wheels.WheelError) as exc:
        raise InstallError(str(exc)) from None
    progress = make.Progress()
    report.log_path(log_path)  # named once the compiler writes it (a failed download writes none)
    report.step(f"compiling with {request.jobs} jobs (about 5 minutes on 2 cores)")

    def on_line(line: str) -> None:
        if progress.feed(line):
            report.progress(progress.fraction(), progress.done, progress.expected, time.monotonic() - started)

    env = cuda_wheels.cuda_env(staging / "cuda")
    try:
        make.run_make(accelsim, env, log_path, request.jobs, on_line)
    except make.BuildFailed as exc:
        hint = _disk_hint(exc.errors, request.root.path)
        raise InstallError(
            f"the build failed after {make.elapsed(time.monotonic() - started)}: {exc}{hint}",
            [*exc.errors, f"full log: {log_path}"],
        ) from None
    report.progress(1.0, progress.done, progress.done, time.monotonic() - started)
    # The object files (~380 MB) are not needed to run: accel-sim.out links gpgpu-sim statically
    # and loads only libcudart.so from gpgpu-sim/lib. The smoke run below proves it.
    for intermediate in INTERMEDIATES:
        shutil.rmtree(accelsim / intermediate, ignore_errors=True)
    report.step(f"compiled in {make.elapsed(time.monotonic() - started)}; smoke run on {smoke.CONFIG}")
    result = smoke.run_smoke(accelsim, env)
    if not result.passed:
        raise InstallError(
            f"the smoke run failed: {result.detail}; nothing was installed", [f"full log: {log_path}"]
        )
    report.step(f"smoke run passed ({result.detail}, {result.seconds:.1f} s)")
    added = _add_configs(accelsim, fetched, report)
    manifest = layout.Manifest(
        key=key,
        framework_commit=framework.commit,
        gpgpu_sim_commit=gpgpu_sim.commit,
        framework_source=framework.describe(),
        gpgpu_sim_source=gpgpu_sim.describe(),
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        build_seconds=round(time.monotonic() - started, 1),
        smoke_passed=True,
        smoke_detail=result.detail,
        compiler=f"{platform.system()} {platform.machine()}",
        extra={ADDED_CONFIGS: added} if added else {},
    )
    (staging / layout.MANIFEST).write_text(manifest.to_json())
    return staging


ADDED_CONFIGS = "added_configs"  # the manifest's `extra` key: configs Cascade added to the tree


def _fetch_configs(request: Request, names: list[str], report: Reporter) -> dict:
    """The pinned files of the configs the tree lacks (none: nothing is fetched)."""
    if not names:
        return {}
    source = f"--configs {request.configs}" if request.configs else "GitHub"
    report.step(f"GPU configs the simulator lacks: {', '.join(names)} (Accel-Sim's own files, from {source})")
    try:
        return extra_configs.fetch(names, request.configs, request.root.path / "downloads")
    except sources.SourceError as exc:
        raise InstallError(str(exc)) from None


def _add_configs(accelsim: Path, fetched: dict, report: Reporter) -> list[str]:
    """Place the fetched configs the simulator takes; one it refuses is left out, said, not fatal
    (the simulator itself works)."""
    if not fetched:
        return []
    added, refused = extra_configs.add_checked(accelsim, fetched)
    for name in added:
        report.step(f"added GPU config {name} (the simulator takes every option)")
    for name, why in refused.items():
        report.step(f"warning: GPU config {name} not added: this simulator refuses it: {why}")
    return added


def _record_configs(build: Path, added: list[str]) -> None:
    """A finished build's manifest names the configs added to it since (written whole: a rename)."""
    manifest = layout.read_manifest(build)
    if manifest is None or not added:
        return
    manifest.extra = {
        **manifest.extra,
        ADDED_CONFIGS: sorted({*manifest.extra.get(ADDED_CONFIGS, []), *added}),
    }
    partial = build / f".{layout.MANIFEST}.{os.getpid()}"
    partial.write_text(manifest.to_json())
    os.replace(partial, build / layout.MANIFEST)


def _move_into_place(staging: Path, final: Path) -> None:
    """One rename: `final` appears whole. An old or broken build there is moved aside first."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        aside = final.with_name(f".old-{final.name}-{os.getpid()}")
        os.replace(final, aside)
        shutil.rmtree(aside, ignore_errors=True)
    os.replace(staging, final)


def _install_deps(missing: list[deps.Requirement], request: Request, report: Reporter) -> None:
    line = deps.apt_line(missing)
    if not request.install_deps:
        raise InstallError(
            f"missing build packages: {deps.describe(missing)}",
            [f"install them with: {line}", "or run this again with --install-deps (as root)"],
        )
    if not deps.can_install():
        raise InstallError(
            f"missing build packages: {deps.describe(missing)}; --install-deps needs root and apt-get",
            [f"as root: {line}"],
        )
    report.step(f"installing {' '.join(deps.packages(missing))} with apt-get")
    ok, output = deps.install(deps.packages(missing))
    still = deps.missing()
    if not ok or still:
        raise InstallError(
            f"apt-get could not install the build packages: {deps.describe(still or missing)}",
            output.splitlines(),
        )


def _os_problem(exc: OSError, root: Path) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"the disk holding {root} is full ({exc.strerror}); a build needs about 600 MB: free some "
            "space or install elsewhere with --prefix DIR. Nothing was installed"
        )
    where = f" ({exc.filename})" if exc.filename else ""
    return f"the build stopped: {exc.strerror or exc}{where}. Nothing was installed"


def _disk_full(root: Path) -> bool:
    """Whether the disk holding `root` has next to nothing left: compilers and assemblers each say
    so in their own words ("No space left on device", "can't write 3886 bytes to section"), so
    ask the file system rather than read every tool's message."""
    try:
        usage = shutil.disk_usage(root)
    except OSError:
        return False
    return usage.free < max(4 << 20, usage.total // 200)  # under 4 MB or 0.5 % left


def _disk_hint(errors: list[str], root: Path) -> str:
    if any("No space left on device" in line for line in errors) or _disk_full(root):
        return (
            f"; the disk holding {root} is full: a build needs about 600 MB (free some space or use "
            "--prefix DIR). Nothing was installed"
        )
    return ". Nothing was installed"


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
