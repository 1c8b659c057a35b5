"""The rules for a GPU config of your own (`cascade configs add DIR`, `POST /api/gpu-configs`):
its name, which files it may have, how large, and what its options may say. Pure: the CLI picks
a folder's files with `config_file_names`, the server checks the body with `add_problem` and
reads the config with `describe`, both before the simulator is asked (`config_probe.py`).

A config's files go, as they are, into the simulator's working folder, so a value naming a file
must name one of them: an option value with `/` or `\\` (an absolute path, `..`) is refused, as a
run's options are (variants.py), and so is a config that names an interconnect or AccelWattch
file it does not bring."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from . import power_report
from .gpu_config_text import config_options, core_clock, parse_gpgpusim_config
from .models import GpuConfig, GpuConfigAdd
from .quoting import quoted
from .variants import PATH_SEPARATORS

GPGPUSIM_CONFIG = "gpgpusim.config"
TRACE_CONFIG = "trace.config"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
ARCH = re.compile(r"sm_[0-9]{2,3}")
# The files a gpgpusim.config names by relative path (the ones the worker copies beside it).
EXTRA_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\.(icnt|xml|csv)")
MAX_FILES = 64
MAX_FILE_BYTES = 4 << 20
MAX_TOTAL_BYTES = 16 << 20
# Options whose value is a file beside gpgpusim.config, and the option that says it is read.
NAMED_FILES = {
    "inter_config_file": ("network_mode", "1"),
    "accelwattch_xml_file": ("power_simulation_enabled", "1"),
}


def allowed_file(name: str) -> bool:
    return name in (GPGPUSIM_CONFIG, TRACE_CONFIG) or bool(EXTRA_FILE.fullmatch(name))


def config_file_names(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """A folder's file names -> (the config's files, the others, which are left out)."""
    taken: list[str] = []
    left: list[str] = []
    for name in sorted(names):
        (taken if allowed_file(name) else left).append(name)
    return taken, left


def name_problem(name: str) -> str | None:
    if not NAME.fullmatch(name):
        return (
            f"config name {quoted(name)} must be 1 to 64 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit (such as SM80_A100_LAB)"
        )
    return None


def _size(text: str) -> int | None:
    """Its size as UTF-8, None when it cannot be written (a lone surrogate from a JSON escape)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def add_problem(body: GpuConfigAdd) -> str | None:
    """Why this config cannot be added, before any simulator looks at it, or None."""
    if problem := name_problem(body.name):
        return problem
    if body.arch is not None and not ARCH.fullmatch(body.arch):
        return f"arch {quoted(body.arch)} must be written like sm_80"
    if GPGPUSIM_CONFIG not in body.files:
        return f"a config needs a {GPGPUSIM_CONFIG}; the files given are {', '.join(sorted(body.files)) or 'none'}"
    if len(body.files) > MAX_FILES:
        return f"a config has at most {MAX_FILES} files, not {len(body.files)}"
    total = 0
    for name, text in body.files.items():
        if not allowed_file(name):
            return (
                f"file {quoted(name)} is not a config file: give {GPGPUSIM_CONFIG}, {TRACE_CONFIG} and the "
                "*.icnt, *.xml and *.csv files gpgpusim.config names (plain names, no folders)"
            )
        size = _size(text)
        if size is None:
            return f"{name} is not text: config files are UTF-8 (or ASCII) text"
        if size > MAX_FILE_BYTES:
            return f"{name} has {size:,} bytes; a config file may have at most {MAX_FILE_BYTES:,}"
        total += size
    if total > MAX_TOTAL_BYTES:
        return f"the config's files have {total:,} bytes; at most {MAX_TOTAL_BYTES:,} in all"
    if TRACE_CONFIG not in body.files:
        # Without it the trace-driven simulator lacks its opcode latencies and units, and fails
        # every kernel (an assertion on spec_id): refused here, not discovered after a run.
        return (
            f"a config needs a {TRACE_CONFIG} beside its {GPGPUSIM_CONFIG} (the trace-driven simulator's "
            "opcode latencies and units): Accel-Sim keeps them in gpu-simulator/configs/tested-cfgs/<NAME>/, "
            "apart from gpgpu-sim's configs: copy the one of the config you started from into the folder"
        )
    return options_problem(body.files)


def interconnect_problem(name: str, text: str) -> str | None:
    """An interconnect file's value that names a file outside the config's folder: BookSim opens
    some of its options as files to write (`watch_out`, `stats_out`, ...), as the simulator that
    checks the config builds its network, so a path there would let a config write anywhere."""
    for line in text.splitlines():
        setting = line.split("//", 1)[0]  # BookSim's comments
        for statement in setting.split(";"):
            key, equals, value = statement.partition("=")
            if equals and any(sep in value for sep in PATH_SEPARATORS):
                return (
                    f"{name}: {key.strip()} = {quoted(value.strip()[:60])}: a config names files in its own "
                    "folder only (no '/' or '\\')"
                )
    return None


def options_problem(files: Mapping[str, str]) -> str | None:
    """A value that reaches outside the config's folder, or a file it names but does not bring."""
    for name, text in files.items():
        if name.endswith(".icnt") and (problem := interconnect_problem(name, text)):
            return problem
    options: dict[str, str] = {}
    for name in (GPGPUSIM_CONFIG, TRACE_CONFIG):
        if name not in files:
            continue
        for option, value in config_options(files[name]).items():
            if any(sep in value for sep in PATH_SEPARATORS):
                return (
                    f"{name}: option -{option} has value {quoted(value)}: a config names files in its own "
                    "folder only (no '/' or '\\')"
                )
            options[option] = value
    clocks = options.get("gpgpu_clock_domains", "").split(":")
    if core_clock(options) is None or len(clocks) != 4:
        return (
            f"{GPGPUSIM_CONFIG} sets no core clock: -gpgpu_clock_domains must give four clocks in MHz, "
            f"<core>:<icnt>:<l2>:<dram> (it gives {quoted(options.get('gpgpu_clock_domains', ''))})"
        )
    for option, (switch, on) in NAMED_FILES.items():
        named = options.get(option)
        if named is not None and options.get(switch) == on and named not in files:
            return (
                f"{GPGPUSIM_CONFIG} names {quoted(named)} (-{option}), which is not among the config's files"
            )
    return None


def describe(body: GpuConfigAdd) -> GpuConfig | None:
    """The config as `GET /api/gpu-configs` lists it (None when no arch can be found: give one)."""
    return parse_gpgpusim_config(
        body.files[GPGPUSIM_CONFIG],
        body.name,
        arch=body.arch,
        added=True,
        power_model=power_report.MODEL_FILE in body.files,
    )
