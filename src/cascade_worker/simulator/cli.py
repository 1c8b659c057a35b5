"""`cascade simulator install|status`: build the real Accel-Sim into Cascade's data directory (or
a --prefix on shared storage), and say which simulator the server uses."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cascade_core import simulator_layout as layout
from cascade_core.cli_usage import EXIT_USAGE, OneLineErrorParser

PROG = "cascade simulator"
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def default_data_dir() -> Path:
    """As `cascade serve` has it (CASCADE_DATA_DIR, else $XDG_DATA_HOME/cascade); the worker
    package does not import the server's settings."""
    if os.environ.get("CASCADE_DATA_DIR"):
        return Path(os.environ["CASCADE_DATA_DIR"])
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "cascade"


def _env_path(name: str) -> Path | None:
    """The flags' defaults from the environment, so `A` in the UI (which passes no flags) builds
    from local sources on a machine without GitHub access."""
    value = os.environ.get(name)
    return Path(value) if value else None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=PROG, description="Install the real Accel-Sim simulator, or say which simulator the server uses."
    )
    commands = parser.add_subparsers(dest="command", metavar="{install,status}")
    install = commands.add_parser(
        "install",
        help="build Accel-Sim (no CUDA toolkit needed; about 5 minutes on 2 cores)",
        description="Build Accel-Sim's trace-driven simulator from pinned public commits (or local "
        "tarballs/checkouts) with CUDA 11.8 headers from PyPI wheels, smoke-run it, and make it the "
        "simulator of the server on this data directory, with Accel-Sim's configs for GPUs its commits have none "
        "of (the A100). A second install of the same sources reuses the build and adds any config it lacks.",
    )
    install.add_argument("--data-dir", type=Path, help="Cascade's data directory (env CASCADE_DATA_DIR)")
    install.add_argument(
        "--prefix",
        type=Path,
        help="build here instead of DATA_DIR/simulator, e.g. on storage a cluster's nodes share "
        "(env CASCADE_SIMULATOR_PREFIX)",
    )
    install.add_argument(
        "--framework",
        type=Path,
        metavar="PATH",
        help="accel-sim-framework as a .tar.gz or checkout (default: the pinned commit from GitHub; "
        "env CASCADE_SIMULATOR_FRAMEWORK)",
    )
    install.add_argument(
        "--gpgpu-sim",
        type=Path,
        metavar="PATH",
        help="gpgpu-sim_distribution as a .tar.gz or checkout (default: the pinned commit from GitHub; "
        "env CASCADE_SIMULATOR_GPGPU_SIM)",
    )
    install.add_argument(
        "--configs",
        type=Path,
        metavar="DIR",
        help="Accel-Sim's config files for the GPUs the simulator has no config of (the A100: "
        "DIR/SM80_A100/gpgpusim.config and trace.config), checked by sha256 (default: the pinned "
        "commits' files from GitHub; env CASCADE_SIMULATOR_CONFIGS)",
    )
    install.add_argument(
        "--cuda-wheels",
        type=Path,
        metavar="DIR",
        help="a folder with the three nvidia-cuda-*-cu11 wheels (default: pip downloads them)",
    )
    install.add_argument(
        "--install-deps", action="store_true", help="install missing build packages with apt-get (as root)"
    )
    install.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel compile jobs")
    install.add_argument("--rebuild", action="store_true", help="build again even if a finished build exists")
    status = commands.add_parser("status", help="which simulator the server uses, its configs and smoke run")
    status.add_argument("--data-dir", type=Path, help="Cascade's data directory (env CASCADE_DATA_DIR)")
    status.add_argument("--json", action="store_true", help="print the JSON /api/launcher has as `simulator`")
    return parser


def previous_sources(data_dir: Path) -> tuple[Path, Path, Path] | None:
    """(framework, gpgpu-sim, install root) of the build the data directory's server uses, when
    it was built from local sources that are still there; None otherwise."""
    link = layout.current_link(data_dir)
    try:
        build = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    manifest = layout.read_manifest(build)
    if manifest is None:
        return None
    framework, gpgpu_sim = Path(manifest.framework_source), Path(manifest.gpgpu_sim_source)
    if not (
        framework.is_absolute() and framework.exists() and gpgpu_sim.is_absolute() and gpgpu_sim.exists()
    ):
        return None  # the pinned commits (a URL), or local copies moved away
    return framework, gpgpu_sim, build.parent.parent


def run_install(args: argparse.Namespace) -> int:
    from .install import InstallError, Request, install
    from .report import Reporter

    report = Reporter(prog=f"{PROG} install")
    if args.jobs < 1:
        print(f"{PROG} install: --jobs must be 1 or more (got {args.jobs})", file=sys.stderr)
        return EXIT_USAGE
    data_dir = (args.data_dir or default_data_dir()).absolute()
    framework = args.framework or _env_path("CASCADE_SIMULATOR_FRAMEWORK")
    gpgpu_sim = args.gpgpu_sim or _env_path("CASCADE_SIMULATOR_GPGPU_SIM")
    prefix = args.prefix or _env_path("CASCADE_SIMULATOR_PREFIX")
    if framework is None and gpgpu_sim is None and (previous := previous_sources(data_dir)):
        # Installing again (the UI's `i` passes no flags): the sources and place of the build the
        # server uses, not a download a machine without GitHub access cannot make.
        framework, gpgpu_sim, root = previous
        prefix = prefix or (root if root != layout.simulator_root(data_dir) else None)
        print(f"{PROG} install: from the sources of the current build ({framework}, {gpgpu_sim})")
    request = Request(
        data_dir=data_dir,
        prefix=prefix,
        framework=framework,
        gpgpu_sim=gpgpu_sim,
        cuda_wheels=args.cuda_wheels,
        install_deps=args.install_deps,
        jobs=args.jobs,
        rebuild=args.rebuild,
        configs=args.configs or _env_path("CASCADE_SIMULATOR_CONFIGS"),
    )
    try:
        build = install(request, report)
    except InstallError as exc:
        report.finish()
        print(f"{PROG} install: {exc}", file=sys.stderr)
        for line in exc.details:
            print(f"  {line}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # the data dir or prefix is unusable (a file on the path, no permission)
        report.finish()
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{PROG} install: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        report.finish()
        print(
            f"{PROG} install: interrupted; the partial build was removed and nothing was installed "
            "(the server keeps the simulator it had)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    report.finish()
    print(
        f"{PROG} install: installed {layout.accelsim_dir(build)}; the server on {request.data_dir} runs "
        "real Accel-Sim sims from the next run (CASCADE_ACCELSIM_DIR, when set, still wins)"
    )
    return 0


def run_status(args: argparse.Namespace) -> int:
    data_dir = (args.data_dir or default_data_dir()).absolute()
    setting = os.environ.get("CASCADE_ACCELSIM_DIR")
    info = layout.describe(data_dir, Path(setting) if setting else None)
    if args.json:
        print(info.model_dump_json(indent=2))
        return 0
    print(status_text(info, data_dir))
    return 0


def status_text(info, data_dir: Path) -> str:
    """The human summary (pure)."""
    if info.kind == "stand-in":
        lines = [
            "simulator: the stand-in (replays recorded logs; its numbers are not your trace's)",
            f"data dir:  {data_dir}",
        ]
    else:
        source = (
            "installed by `cascade simulator install`" if info.kind == "installed" else "CASCADE_ACCELSIM_DIR"
        )
        lines = [f"simulator: real Accel-Sim, {source}", f"path:      {info.path}"]
        if info.framework_commit or info.gpgpu_sim_commit:
            lines.append(
                f"commits:   accel-sim-framework {info.framework_commit or '?'}, "
                f"gpgpu-sim {info.gpgpu_sim_commit or '?'}"
            )
        if info.built_at:
            lines.append(f"built:     {info.built_at}")
        lines.append(f"configs:   {info.configs}")
        if info.archs:  # what its trace parser has opcodes for (a trace of another arch cannot run)
            lines.append(f"traces:    {', '.join(info.archs)}")
        smoke = {True: "passed", False: "FAILED", None: "not run (not built by Cascade)"}[info.smoke_passed]
        lines.append(f"smoke run: {smoke}" + (f" ({info.smoke_detail})" if info.smoke_detail else ""))
    if info.problem:
        lines.append(f"problem:   {info.problem}")
    if info.hint:
        lines.append(f"to simulate for real: {info.hint}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "install":
        return run_install(args)
    if args.command == "status":
        return run_status(args)
    print(f"{PROG}: say install or status (--help for usage)", file=sys.stderr)
    return EXIT_USAGE
