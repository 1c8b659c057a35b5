"""Where a GPU config's files are, and asking the simulator itself whether it takes them.

A config is a folder holding `gpgpusim.config` and the files it names by relative path
(`*.icnt`, AccelWattch `*.xml` / `*.csv`), plus a `trace.config`: in an Accel-Sim tree those are
two folders (`gpgpu-sim/configs/tested-cfgs/<name>/` and `configs/tested-cfgs/<name>/`), in a
config added with `cascade configs add` one.

The probe runs `accel-sim.out` on the config with a trace that does not exist: the simulator
parses every option (refusing one it does not know, or a value it cannot read, in its own words:
`GPGPU-Sim ** ERROR: Unknown Option: '-x'`), prints them all with their values and descriptions,
builds its whole model and only then fails to open the trace (about 0.3 s). Reaching that point
is what "the simulator takes this config" means. The server reads the option list from it
(`services/variant_check.py`), `cascade configs add` and `cascade simulator install` the verdict.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .childproc import die_with_parent
from .simulator_layout import BINARY, lib_dir_of, with_library_dir
from .variants import OptionInfo, parse_option_echo

TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")
GPGPUSIM_CONFIG = "gpgpusim.config"
TRACE_CONFIG = "trace.config"
# Files a gpgpusim.config names by relative path: copied beside it into the simulator's folder.
COPIED_PATTERNS = ("*.icnt", "*.xml", "*.csv")
PROBE_TIMEOUT_S = 30.0
# Printed once the model is built (the options were all taken), then the trace is opened.
# How the simulator says it built its model from the config: the line it prints then, or its
# complaint that the probe's trace (which does not exist) cannot be opened, after the model.
_MODEL_BUILT = "GPGPU-Sim uArch: performance model initialization complete."
_NO_TRACE = "Unable to open file: "
MAX_COMPLAINT_LINES = 3


@dataclass(frozen=True)
class ConfigFiles:
    """One GPU config's files: `directory` holds gpgpusim.config and the files it names."""

    name: str
    directory: Path
    trace_config: Path | None  # None: the config has none (SM2_GTX480)

    @classmethod
    def in_simulator(cls, accelsim: Path, name: str) -> ConfigFiles:
        trace_config = accelsim / TRACE_CFGS / name / TRACE_CONFIG
        return cls(name, accelsim / TESTED_CFGS / name, trace_config if trace_config.is_file() else None)

    @classmethod
    def in_folder(cls, folder: Path, name: str) -> ConfigFiles:
        trace_config = folder / TRACE_CONFIG
        return cls(name, folder, trace_config if trace_config.is_file() else None)

    @property
    def gpgpusim_config(self) -> Path:
        return self.directory / GPGPUSIM_CONFIG

    def files(self) -> list[Path]:
        """Every file the simulator reads: gpgpusim.config, what it names, trace.config."""
        found = [self.gpgpusim_config]
        for pattern in COPIED_PATTERNS:
            found += sorted(p for p in self.directory.glob(pattern) if p.is_file())
        return found + ([self.trace_config] if self.trace_config is not None else [])

    def copy_into(self, folder: Path) -> list[str]:
        """The files into `folder`; returns the `-config` arguments that read them there."""
        for path in self.files():
            shutil.copyfile(path, folder / path.name)
        argv = ["-config", f"./{GPGPUSIM_CONFIG}"]
        return argv + (["-config", f"./{TRACE_CONFIG}"] if self.trace_config is not None else [])


@dataclass(frozen=True)
class ProbeResult:
    ran: bool  # False: the simulator could not be run at all, so nothing is known
    accepted: bool
    complaint: str = ""  # the simulator's own words when it refused the config
    options: dict[str, OptionInfo] = field(default_factory=dict)


def verdict(returncode: int | None, output: str, trace: str | None = None) -> tuple[bool, str]:
    """Pure: did the simulator take the config (it built its model: its own line says so, whole,
    or it went on to open the probe's `trace`), and if not, its complaint: its ERROR lines, else
    its last lines. A config's values are echoed in the output too, so a marker must be a whole
    line of the simulator's, never text a value could hold."""
    lines_seen = output.splitlines()
    if _MODEL_BUILT in lines_seen or (trace is not None and f"{_NO_TRACE}{trace}" in lines_seen):
        return True, ""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [
        line for line in lines if any(word in line for word in ("ERROR", "Error", "error:", "Assertion"))
    ]
    chosen = (errors or lines[-MAX_COMPLAINT_LINES:])[:MAX_COMPLAINT_LINES]
    said = "; ".join(chosen) if chosen else "no output"
    status = f" (exit status {returncode})" if returncode else ""
    return False, f"{said}{status}"


# A check builds the config's model and stops: a config whose model needs more than this (a
# -gpgpu_n_mem of thousands) is refused, never allowed to take the server's memory.
PROBE_MEMORY_BYTES = 4 * 2**30


def _bounded_child() -> Callable[[], None]:
    """The check's process: gone with its server (even one killed with -9), and bounded in
    memory and CPU time whatever the config asks for (a `preexec_fn`, made in the parent)."""
    with_parent = die_with_parent()

    def preexec() -> None:
        with_parent()
        resource.setrlimit(resource.RLIMIT_AS, (PROBE_MEMORY_BYTES, PROBE_MEMORY_BYTES))
        cpu = int(PROBE_TIMEOUT_S) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return preexec


def probe(accelsim: Path, config: ConfigFiles, timeout: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Run the simulator on `config` (blocking; never raises for a refused config)."""
    if not config.gpgpusim_config.is_file():
        return ProbeResult(ran=True, accepted=False, complaint=f"{config.name} has no {GPGPUSIM_CONFIG}")
    with tempfile.TemporaryDirectory(prefix="cascade-config-probe-") as scratch:
        work = Path(scratch)
        try:
            argv = [str(accelsim / BINARY), *config.copy_into(work)]
        except OSError as exc:
            return ProbeResult(
                ran=True, accepted=False, complaint=f"cannot read {config.name}: {exc.strerror or exc}"
            )
        trace = str(work / "no-such-trace" / "kernelslist.g")
        argv += ["-trace", trace]
        env = with_library_dir(dict(os.environ), lib_dir_of(accelsim))
        try:
            done = subprocess.run(
                argv,
                cwd=work,
                env=env,
                capture_output=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                preexec_fn=_bounded_child(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return ProbeResult(ran=False, accepted=False, complaint=f"cannot run the simulator: {exc}")
    stdout = done.stdout.decode(errors="replace")
    if b"std::bad_alloc" in done.stderr or b"std::bad_alloc" in done.stdout:
        return ProbeResult(
            ran=True,
            accepted=False,
            complaint=f"its model needs more than {PROBE_MEMORY_BYTES >> 30} GiB of memory to build (std::bad_alloc)",
        )
    accepted, complaint = verdict(
        done.returncode, stdout + "\n" + done.stderr.decode(errors="replace"), trace
    )
    return ProbeResult(ran=True, accepted=accepted, complaint=complaint, options=parse_option_echo(stdout))
