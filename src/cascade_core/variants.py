"""Config variants: a GPU config plus simulator options (`-gpgpu_n_clusters 40`), the way Accel-Sim
takes them after its configs. Pure (the standard library only), shared by the server (validation,
labels), the worker (the command line), the scripting CLI (`--sweep`) and the terminal UI:

- the rules an option name and value follow, and the options Cascade itself sets;
- a variant's default label, in a short, stable spelling;
- reading option names from a `gpgpusim.config` and from the simulator's own config echo;
- the cross product `cascade run start --sweep` makes;
- the core clock a variant runs at, when its options change `-gpgpu_clock_domains`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cascade_core import power_report
from cascade_core.quoting import quoted

# An option as the simulator registers it: `-gpgpu_n_clusters`, `-gpgpu_cache:dl1`. Matched with
# fullmatch: `$` would also match before a trailing newline.
OPTION_NAME = re.compile(r"-[A-Za-z_][A-Za-z0-9_:.]{0,127}")
# A value is one token, and only of characters no shell gives a meaning to: letters, digits and
# . , : + - = @ % _ (enough for numbers, clock lists and cache geometry strings). No `/` or `\`:
# a value is never a path, so an option naming a file (-ptx_line_stats_filename,
# -hw_perf_file_name, ...) can only name one in the sim's own working directory.
OPTION_VALUE = re.compile(r"[A-Za-z0-9._,:+\-=@%]{1,256}")
PATH_SEPARATORS = ("/", "\\")
MAX_OPTIONS = 64
MAX_LABEL = 80
# Options Cascade sets on the command line itself: an entry may not override them.
RESERVED_OPTIONS = frozenset({"-config", "-trace"})
CLOCK_OPTION = "-gpgpu_clock_domains"
# Clocks in MHz a variant may give: far beyond any GPU both ways, yet every kernel's time
# (cycles / clock) and every ratio between variants stays a number people can read.
MIN_CLOCK_MHZ, MAX_CLOCK_MHZ = 1.0, 100_000.0
# Any number inside a value: a simulator parameter past these is a typo or an attack.
MIN_NUMBER, MAX_NUMBER = 1e-9, 1e18
# What separates the numbers of a composite value (`500.0:2000.0`, `4,1`, `N:64:128:16,L:B:m`).
_PARTS = re.compile(r"[:,]")


class VariantError(ValueError):
    """An entry's options or label cannot be used; the message names the option."""


def canonical_name(name: str) -> str:
    """`gpgpu_n_clusters` and `-gpgpu_n_clusters` name the same option: the dashed spelling."""
    name = name.strip()
    return name if name.startswith("-") else "-" + name


# AccelWattch's switches: a run entry's `power` sets them with the config's own model, checked
# to exist, and reads what they produce; given as options they would pay its cost unread, or
# make a config without a model fail in the simulator.
POWER_SWITCHES = frozenset(power_report.POWER_OPTIONS)


def name_problem(name: str) -> str | None:
    if name in RESERVED_OPTIONS:
        return f"option {quoted(name)} is set by Cascade itself and cannot be given"
    if name in POWER_SWITCHES:
        return f'option {quoted(name)} is set by Cascade itself: give the run entry `"power": true` (--power)'
    if not OPTION_NAME.fullmatch(name):
        return (
            f"option {quoted(name)} is not an option name (a dash, then letters, digits, '_', ':' or '.', "
            "such as -gpgpu_n_clusters)"
        )
    return None


def value_problem(name: str, value: str) -> str | None:
    """Why `value` cannot be given to option `name`, or None: the one rule for option values (the
    server's check, the worker's and the CLIs' go through it)."""
    if not isinstance(value, str):
        return f"option {quoted(name)} has a value that is not text or a number"
    if any(sep in value for sep in PATH_SEPARATORS):
        return (
            f"option {quoted(name)} has value {quoted(value)}: values are single tokens without paths (no '/' or "
            "'\\'); an option naming a file names one in the sim's own working directory"
        )
    if not OPTION_VALUE.fullmatch(value):
        return (
            f"option {quoted(name)} has value {quoted(value)}: a value is one token of letters, digits and "
            ". , : + - = @ % _ (no whitespace or shell metacharacters), 1 to 256 characters"
        )
    if name == CLOCK_OPTION:
        return clock_problem(value)
    if numeric(value) is None and OPTION_NAME.fullmatch(value):
        # A value the simulator cannot read as its option's type is read as the next option's
        # name (a boolean given `-trace` sets `-trace`): no value is ever an option's name.
        return (
            f"option {quoted(name)} has value {quoted(value)}, which is an option's name: the simulator "
            "would read it as the next option"
        )
    return numbers_problem(name, value)


def numbers_problem(name: str, value: str) -> str | None:
    """Every number in a value (`40`, or each part of `500:2000:1e400` or `4,1`) is finite, at
    most MAX_NUMBER in size and, unless 0, at least MIN_NUMBER: the simulator reads composite
    values itself (sscanf), where `inf` or `1e-320` make infinite periods and zero times."""
    for part in _PARTS.split(value):
        number = numeric(part)
        if number is None:
            continue
        if not math.isfinite(number):
            return f"option {quoted(name)} has value {quoted(value)}: a number must be finite"
        if abs(number) > MAX_NUMBER or (number != 0 and abs(number) < MIN_NUMBER):
            return (
                f"option {quoted(name)} has value {quoted(value)}: each number in it must be 0 or between "
                f"{MIN_NUMBER:g} and {MAX_NUMBER:g} in size, not {part}"
            )
    return None


def clock_problem(value: str) -> str | None:
    """`-gpgpu_clock_domains` is `core:interconnect:L2:DRAM` in MHz, each a finite number from
    MIN_CLOCK_MHZ to MAX_CLOCK_MHZ: the core clock turns every kernel's cycles into its time."""
    parts = value.split(":")
    numbers = [numeric(p) for p in parts]
    if len(parts) != 4 or any(
        n is None or not math.isfinite(n) or not MIN_CLOCK_MHZ <= n <= MAX_CLOCK_MHZ for n in numbers
    ):
        return (
            f"option {quoted(CLOCK_OPTION)} has value {quoted(value)}: it is four clocks in MHz, "
            f"core:interconnect:L2:DRAM, each from {MIN_CLOCK_MHZ:g} to {MAX_CLOCK_MHZ:g}"
        )
    return None


def normalize_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options with canonical names, sorted by name; raises VariantError naming the first bad one."""
    if len(options) > MAX_OPTIONS:
        raise VariantError(f"at most {MAX_OPTIONS} options per entry, not {len(options)}")
    out: dict[str, str] = {}
    for raw, value in options.items():
        name = canonical_name(raw)
        if problem := name_problem(name) or value_problem(name, value):
            raise VariantError(problem)
        if name in out:
            raise VariantError(f"option {quoted(name)} is given twice")
        out[name] = value
    return dict(sorted(out.items()))


def default_label(gpu_config: str, options: Mapping[str, str]) -> str:
    """`SM7_QV100` without options; `SM7_QV100[gpgpu_n_clusters=40,dram_latency=400]` with them:
    options sorted by name, without their dash."""
    if not options:
        return gpu_config
    inner = ",".join(f"{name.lstrip('-')}={value}" for name, value in sorted(options.items()))
    return f"{gpu_config}[{inner}]"


def label_problem(label: str) -> str | None:
    if not label or len(label) > MAX_LABEL or label != label.strip() or not label.isprintable():
        return (
            f"label {quoted(label)} must be 1 to {MAX_LABEL} printable characters, "
            "without leading or trailing spaces"
        )
    return None


def options_key(gpu_config: str, options: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What makes two entries the same variant: the config and its options, in any order."""
    return gpu_config, tuple(sorted((canonical_name(k), v) for k, v in options.items()))


def core_clock_mhz(options: Mapping[str, str], default: float) -> float:
    """The core clock the variant runs at: the first value of an overriding `-gpgpu_clock_domains`."""
    value = options.get(CLOCK_OPTION)
    if value is None:
        return default
    try:
        clock = float(value.split(":")[0])
    except ValueError:
        return default
    # (a run stored before clocks were bounded may hold one that is not)
    return clock if math.isfinite(clock) and clock > 0 else default


# --- the options a config and the simulator know ---------------------------------------------

_CONFIG_LINE = re.compile(r"^\s*(-[A-Za-z_][A-Za-z0-9_:.]*)\s+(\S.*?)\s*$")


def config_file_options(text: str) -> dict[str, str]:
    """`-name value` lines of a gpgpusim.config / trace.config (later ones win, `#` starts a comment)."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        match = _CONFIG_LINE.match(line)
        if match:
            options[match.group(1)] = match.group(2)
    return options


@dataclass(frozen=True)
class OptionInfo:
    name: str
    value: str
    description: str = ""


_ECHO_LINE = re.compile(r"^(-[A-Za-z_][A-Za-z0-9_:.]*)\s+(.*?)\s+# ?(.*)$")


def parse_option_echo(stdout: str) -> dict[str, OptionInfo]:
    """The options `accel-sim.out` prints after `GPGPU-Sim: Configuration options:` (every option
    it registers, with the effective value and its description)."""
    options: dict[str, OptionInfo] = {}
    started = False
    for line in stdout.splitlines():
        if not started:
            started = line.startswith("GPGPU-Sim: Configuration options:")
            continue
        match = _ECHO_LINE.match(line)
        if match:
            options[match.group(1)] = OptionInfo(
                match.group(1), match.group(2).strip(), match.group(3).strip()
            )
        elif options and line.strip() and not line.startswith("-"):
            break  # the block ended
    return options


# --- sweeps -------------------------------------------------------------------------------------


def parse_assignment(text: str) -> tuple[str, str]:
    """`-gpgpu_n_clusters=40` (or `gpgpu_n_clusters=40`) -> ("-gpgpu_n_clusters", "40")."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise VariantError(f"{quoted(text)} is not OPTION=VALUE, such as -gpgpu_n_clusters=40")
    return canonical_name(name), value


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """`-gpgpu_n_clusters=20,40,80` -> ("-gpgpu_n_clusters", ["20", "40", "80"])."""
    name, values = parse_assignment(text)
    items = [v.strip() for v in values.split(",")]
    if not values or any(not v for v in items):
        raise VariantError(
            f"{quoted(text)} needs values after '=', separated by commas, such as {name}=20,40,80"
        )
    return name, list(dict.fromkeys(items))


def sweep_options(
    sweeps: Sequence[tuple[str, Sequence[str]]], fixed: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """The cross product of the sweeps (the first varies slowest), each with the `fixed` options;
    sweeps of the same option merge their values."""
    merged: dict[str, list[str]] = {}
    for name, values in sweeps:
        merged.setdefault(canonical_name(name), [])
        merged[canonical_name(name)] += [v for v in values if v not in merged[canonical_name(name)]]
    base = {canonical_name(k): v for k, v in (fixed or {}).items()}
    names = list(merged)
    return [{**base, **dict(zip(names, combo))} for combo in itertools.product(*merged.values())]


def swept_value(options: Mapping[str, str], baseline: Mapping[str, str] | None = None) -> str:
    """How a variant differs, in a few characters: the values of its options that the baseline
    does not have (`40`, or `40/400` for two)."""
    base = baseline or {}
    changed = [value for name, value in sorted(options.items()) if base.get(name) != value]
    return "/".join(changed) if changed else "base"


def numeric(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def variants_in_order(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Labels in first-seen order, without repeats."""
    return list(dict.fromkeys(label for _, label in pairs))
