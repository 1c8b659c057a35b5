"""Incremental parser for Accel-Sim's stdout: per-kernel stats blocks, progress and the log tail.

Pure logic, no I/O. The storage layer feeds one parser per sim with log chunks in `seq` order
and saves `state()` in the same transaction as the chunk, so a restarted server rebuilds the
parser with `LogParser(clock, state=saved)` and carries on exactly where it stopped.

What is recognised (see shared/reference/accelsim-formats.md, section 1):

- Launch lines, with or without the ` cuda_stream_id: M` suffix of newer builds:
  `launching kernel name: <name> uid: <uid>[ cuda_stream_id: <id>]` -> `current_kernel`.
- A stats block: from a line beginning `kernel_name = ` through a line beginning
  `gpgpu_silicon_slowdown = ` (inclusive). A block is only reported once that last line arrived,
  so a truncated log yields only finished kernels. When that line is the last one received so
  far and does not look whole (`<digits>x`, or `Nan`), the block waits for one more line, since
  a killed simulator can stop mid-line. A new `kernel_name = ` line inside an unfinished block
  means the old one was cut off: it is dropped, never reported.
- Inside a block, every `key = value` line (split at the first ` = `) and every `key=value` line
  (an identifier, `=`, one token, nothing else: `gpu_total_sim_rate=160000`) goes into `stats`.
  Whitespace around key and value is stripped; a line whose key is empty is ignored, and so is
  every line of neither form (`n_cmd=1 n_nop=2 ...`, `==== Core cache stats ====`, ...).
- Keys repeat (once per memory partition, per DRAM, ...) and every value is kept: the first
  occurrence of a key in the block goes under its name, so the per-kernel head values
  (`gpu_sim_cycle`, ...) are never overwritten by later sections; the n-th occurrence goes under
  `<key>#<n>` (`Bank_Level_Parallism#2`, `#3`, ...; when a key of that name already exists, the
  next free number). Keys keep the order in which their lines came.
- Values are floats when they are numbers: what Python's `float()` reads, without `_`, `,` or spaces
  (decimal, exponent, `nan`, `-nan`, `inf`, `-inf`, `infinity`, any case), optionally followed by
  `%` (`gpu_occupancy = 95.6263% ` -> 95.6263, `-nan%` -> nan). Everything else stays the stripped
  string; in particular `none`, which Accel-Sim prints for a value it does not have, stays the
  string "none" (it is not a number, and NaN would wrongly claim a computed 0/0). Values with
  units (`L2_BW = 1.9742 GB/Sec`, `gpgpu_silicon_slowdown = 15000000x`) stay strings.
  `kernel_name` always stays the string (even for a kernel called `inf`); with concurrent kernels
  it lists every name, and `kernel_launch_uid` every uid ("3 4", a string).
- `gpgpu_simulation_rate = N (inst/sec)` anywhere -> `latest["sim_rate_ips"]` (the `(cycle/sec)`
  line is a rate in cycles, not used). `latest`'s `gpu_tot_*` come from each completed block
  (None when the block's value is not a finite number).
- `GPGPU-Sim: *** exit detected ***` (the simulator's only proof of a complete run) ->
  `exit_detected`.

Chunks are lists of whole lines without their newlines. Anything else in them (config echo,
thread-block lines, binary junk, error messages) is skipped without raising.

Speed: about 97% of a real log is stats-block lines. They are read by `read_block_lines`,
compiled from `_accelsim_merge.c` when the package was built with a C compiler (setup.py), else
run as the Python below: every line is kept, so each one costs a dict entry, and what each line
holds is cached (lines repeat from kernel to kernel). Launch, rate and exit lines are found with
`str.rfind`/`in` on newline-prefixed markers in the chunk joined once (Python's `re` is several
times slower per character than `str` methods). `benchmarks/bench_parser_vs.py` compares the
speed with the parser that kept first values only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from cascade_server.shared.models import KernelStat

__all__ = [
    "LogParser",
    "ParsedKernel",
    "STATE_VERSION",
    "TAIL_LINES",
    "TAIL_LINE_MAX",
    "MAX_BLOCK_KEYS",
    "STATS_LINE_MAX",
    "NATIVE",
    "clear_caches",
]

STATE_VERSION = 1
TAIL_LINES = 20
# A line of the tail is cut to this many characters (the whole line stays in the log): the tail
# travels in every sim summary.
TAIL_LINE_MAX = 1000
# A line longer than this is no stats line (real ones are under 150 characters): not read into a
# block, so an open block's bytes are bounded as well as its keys. In _accelsim_merge.c too.
STATS_LINE_MAX = 1024
# A block that never closes (a corrupt stream) must not grow the saved state without bound;
# real blocks have about 1,000-3,000 `key = value` lines. Keys past this many are not kept.
MAX_BLOCK_KEYS = 50_000
# read_block_lines' caches are shared by every parser in the process (what a line holds depends
# on the line alone), so their memory is bounded however many sims are parsed: at most this many
# lines (of up to _CACHED_LINE_MAX characters: real stats lines are under 150; a longer one is
# read each time) and keys of up to _CACHED_KEY_MAX characters (with their names up to `<key>#64`:
# real blocks repeat a key a few dozen times; past that a name is made each time), about 50 MB
# at most. A full cache takes nothing more, and the parser clears it before its next read. The
# same bounds are in _accelsim_merge.c.
_LINE_CACHE_LIMIT = 50_000
_KEYS_CACHED_LIMIT = 2_000
_CACHED_LINE_MAX = 200
_CACHED_KEY_MAX = 100
_NAMES_CACHED_PER_KEY = 64

_FIRST_LINE = "kernel_name = "  # a stats block's first line starts so ...
_BLOCK_MARKERS = (_FIRST_LINE, "gpgpu_silicon_slowdown = ")  # ... and its last line so
# Markers searched in the joined chunk, each with the newline that starts its line (the text
# starts with "\n").
_LAUNCH = "\nlaunching kernel name: "
_RATE = "\ngpgpu_simulation_rate = "
_EXIT = "\nGPGPU-Sim: *** exit detected ***"

# The uid is required: a launch line cut mid-name must not name a kernel.
_LAUNCH_RE = re.compile(r"launching kernel name: (\S+) uid: [0-9]")
# A complete last line of a block: `%ux`, or `Nan` from builds that guard a zero cycle rate.
_SLOWDOWN_LINE_RE = re.compile(r"gpgpu_silicon_slowdown = (?:[0-9]+x|[-+]?(?i:nan|inf)x?)\s*")
_RATE_RE = re.compile(r"gpgpu_simulation_rate = ([0-9]+(?:\.[0-9]*)?)[^\S\n]*\(inst/sec\)")
# The `key=value` line form; only tried on the few block lines that have "=" but no " = ".
_KEY_EQ_VALUE_RE = re.compile(r"\s*([A-Za-z_][\w.\[\]]*)=([^\s=]+)\s*")

_SEP = " = "
_NUMBER_START = frozenset("0123456789+-.nNiI")
_HEAD_KEYS = ("gpu_tot_sim_cycle", "gpu_tot_sim_insn", "gpu_tot_ipc")


def parse_value(raw: str) -> float | str:
    """One stats value: a float when it is a number (see the module docstring), else the
    stripped string."""
    s = raw.strip()
    # Cheap rejections first: an exception from float() costs more than the rest of the line.
    if not s or s[0] not in _NUMBER_START or " " in s or "," in s or "_" in s:
        return s
    try:
        return float(s[:-1] if s[-1] == "%" else s)
    except ValueError:
        return s


def _key_eq_value(line: str) -> tuple[str, str] | None:
    """The key and raw value of a stripped `key=value` line, else None."""
    m = _KEY_EQ_VALUE_RE.fullmatch(line)
    return None if m is None else (m[1], m[2])


# What a block line holds: its value and key, or None for a line of neither form.
LineEntry = tuple[float | str, str] | None


def _names_of(names_cache: dict[str, list[str]], key: str) -> list[str]:
    names = names_cache.get(key)  # [key, key#2, key#3, ...], each made once
    if names is None:
        names = [key]
        if len(names_cache) < _KEYS_CACHED_LIMIT and len(key) <= _CACHED_KEY_MAX:
            names_cache[key] = names
    return names


def _line_entry(
    line: str,
    names_cache: dict[str, list[str]],
    key_eq_value: Callable[[str], tuple[str, str] | None],
) -> LineEntry:
    key, sep, raw = line.partition(_SEP)
    if sep:
        key = key.strip()
    else:  # no " = ": maybe a `key=value` line (a few per block)
        line = key.strip()
        if " " in line or "\t" in line:
            return None
        pair = key_eq_value(line)
        if pair is None:
            return None
        key, raw = pair
    if not key:
        return None
    # Lines with the same key share one key object (and its hash), the first of its names.
    return parse_value(raw), _names_of(names_cache, key)[0]


def _add_to_block(
    block: dict[str, float | str],
    repeats: dict[str, int],
    names_cache: dict[str, list[str]],
    key: str,
    value: float | str,
) -> None:
    if key not in block:
        block[key] = value
        return
    names = _names_of(names_cache, key)
    n = repeats.get(key, 1)
    if not 1 <= n <= len(block):  # no count: a number is never past the block's size
        n = 1
    n += 1
    while (name := _nth_name(names, key, n)) in block:  # taken, or `repeats` is cold
        n += 1
    repeats[key] = n
    block[name] = value


def _nth_name(names: list[str], key: str, n: int) -> str:
    """`<key>#<n>`, from the key's names when cached (up to _NAMES_CACHED_PER_KEY)."""
    if n <= len(names):
        return names[n - 1]
    if n > _NAMES_CACHED_PER_KEY:
        return f"{key}#{n}"
    while len(names) < n:  # lags `repeats` when the cache was cleared within a block
        names.append(f"{key}#{len(names) + 1}")
    return names[n - 1]


def read_block_lines(
    block: dict[str, float | str],
    lines: list[str],
    start: int,
    max_keys: int,
    repeats: dict[str, int],
    line_cache: dict[str, LineEntry],
    names_cache: dict[str, list[str]],
    key_eq_value: Callable[[str], tuple[str, str] | None],
) -> tuple[int, bool]:
    """Read the lines of the block being read, from `lines[start]` on, into `block`: up to its
    last line (the one starting `gpgpu_silicon_slowdown = `, read too) or the next block's first
    line (starting `kernel_name = `, not read), or the end of `lines`. Return the index of the
    first line not read and whether the block's last line was read.

    The key/value lines go in the first occurrence of a key under its name, the n-th under
    `<key>#<n>` (the next number not taken), while the block has fewer than `max_keys` keys.
    `repeats` remembers each key's latest number in the block (only a cache: empty, the numbers
    found are the same). `line_cache` maps a line to what it holds and `names_cache` a key to
    its names `[key, key#2, key#3, ...]`: both only save time (lines repeat from kernel to
    kernel, keys within a block), and the caller clears them when they grow. `key_eq_value`
    reads the `key=value` form.

    This is the specification of the compiled `_accelsim_merge.read_block_lines`, which the
    parser uses when it was built (see setup.py)."""
    for i in range(start, len(lines)):
        line = lines[i]
        if "=" not in line:  # neither form, nor a block's first or last line
            continue
        ended = line.startswith(_BLOCK_MARKERS)
        if ended and line.startswith(_FIRST_LINE):
            return i, False  # the next block's first line: this block was cut off
        if len(block) < max_keys and len(line) <= STATS_LINE_MAX:
            if line in line_cache:
                entry = line_cache[line]
            else:
                entry = _line_entry(line, names_cache, key_eq_value)
                if len(line) <= _CACHED_LINE_MAX and len(line_cache) < _LINE_CACHE_LIMIT:
                    line_cache[line] = entry
            if entry is not None:
                _add_to_block(block, repeats, names_cache, entry[1], entry[0])
        if ended:
            return i + 1, True
    return len(lines), False


try:
    from cascade_server._accelsim_merge import read_block_lines as _read_block_lines

    NATIVE = True
except ImportError:  # built without a C compiler: the same function, in Python
    _read_block_lines = read_block_lines
    NATIVE = False

_line_cache: dict[str, LineEntry] = {}
_names_cache: dict[str, list[str]] = {}


def clear_caches() -> None:
    """Empty the caches every parser shares (benchmarks time a cold start with this)."""
    _line_cache.clear()
    _names_cache.clear()


def _tail_line(line: str) -> str:
    """The line cut to TAIL_LINE_MAX characters, saying how long it was (a cut line is not cut
    again when a restored parser reads its saved tail)."""
    if len(line) <= TAIL_LINE_MAX:
        return line
    said = f"… ({len(line):,} characters)"
    return line[: TAIL_LINE_MAX - len(said)] + said


def _finite(value: float | str | None) -> float | None:
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _as_int(value: float | str | None) -> int | None:
    """A count from the stats map: a finite float, or the first token of a string ("3 4")."""
    if isinstance(value, str):
        tokens = value.split(maxsplit=1)
        token = tokens[0] if tokens else ""
        return int(token) if token.isascii() and token.isdigit() else None
    f = _finite(value)
    return int(f) if f is not None else None


@dataclass(slots=True)
class ParsedKernel:
    """One finished stats block."""

    kernel_index: int  # 0-based completion order within the sim
    kernel_name: str  # the block's first kernel name (concurrent kernels list several)
    kernel_launch_uid: int | None  # the block's first uid
    gpu_sim_cycle: int | None
    gpu_sim_insn: int | None
    gpu_ipc: float | None  # None when missing or not finite
    sim_time_ns: float | None  # gpu_sim_cycle / core_clock_mhz * 1000
    stats: dict[str, float | str] = field(default_factory=dict)

    def to_stat(self, sim_id: str) -> KernelStat:
        return KernelStat(
            sim_id=sim_id,
            kernel_index=self.kernel_index,
            kernel_name=self.kernel_name,
            kernel_launch_uid=self.kernel_launch_uid,
            gpu_sim_cycle=self.gpu_sim_cycle,
            gpu_sim_insn=self.gpu_sim_insn,
            gpu_ipc=self.gpu_ipc,
            sim_time_ns=self.sim_time_ns,
            stats=self.stats,
        )


class LogParser:
    """Feeds on the log chunks of one sim; see the module docstring for what it recognises."""

    __slots__ = (
        "_clock_mhz",
        "_kernels_done",
        "_current_kernel",
        "_latest",
        "_tail",
        "_exit_detected",
        "_block",
        "_block_ended",
        "_repeats",
    )

    def __init__(self, core_clock_mhz: float, state: dict | None = None):
        self._clock_mhz = float(core_clock_mhz)
        # key -> the number of its latest occurrence in the current block (read_block_lines).
        # Only a cache: a restored parser starts it empty and finds the next free number.
        self._repeats: dict[str, int] = {}
        self._kernels_done = 0
        self._current_kernel: str | None = None
        self._latest: dict[str, float | None] = {
            "gpu_tot_sim_cycle": None,
            "gpu_tot_sim_insn": None,
            "gpu_tot_ipc": None,
            "sim_rate_ips": None,
        }
        self._tail: list[str] = []
        self._exit_detected = False
        # Stats of the block being read, in log order of first occurrence; None outside a block.
        self._block: dict[str, float | str] | None = None
        # The block's last line arrived as the chunk's last line but does not look complete
        # (see _SLOWDOWN_LINE_RE); the next line proves it was, so the block is reported then.
        self._block_ended = False
        if state is not None:
            self._restore(state)

    # ---- read-only views -----------------------------------------------------------------

    @property
    def current_kernel(self) -> str | None:
        return self._current_kernel

    @property
    def latest(self) -> dict[str, float | None]:
        return dict(self._latest)

    @property
    def kernels_done(self) -> int:
        return self._kernels_done

    @property
    def log_tail(self) -> list[str]:
        return list(self._tail)

    @property
    def exit_detected(self) -> bool:
        return self._exit_detected

    @property
    def in_block(self) -> bool:
        """True while a stats block has started and not yet ended."""
        return self._block is not None

    # ---- state ---------------------------------------------------------------------------

    def state(self) -> dict:
        """A JSON-serialisable snapshot (stats may hold NaN/inf: json's default allow_nan=True).
        Everything is copied, so later feeds never change a snapshot already taken."""
        return {
            "version": STATE_VERSION,
            "kernels_done": self._kernels_done,
            "current_kernel": self._current_kernel,
            "latest": dict(self._latest),
            "log_tail": list(self._tail),
            "exit_detected": self._exit_detected,
            "block": None if self._block is None else dict(self._block),
            "block_ended": self._block_ended,
        }

    def _restore(self, state: dict) -> None:
        if not isinstance(state, dict):
            kind = type(state).__name__
            raise ValueError(f"invalid LogParser state: expected an object, got {kind}")
        try:
            version = state.get("version")
            if version != STATE_VERSION:
                raise ValueError(f"unsupported version {version!r} (expected {STATE_VERSION})")
            kernels_done = state["kernels_done"]
            current = state["current_kernel"]
            latest = state["latest"]
            tail = state["log_tail"]
            exit_detected = state["exit_detected"]
            block = state["block"]
            block_ended = state["block_ended"]
            if not isinstance(kernels_done, int) or kernels_done < 0:
                raise ValueError("kernels_done must be a non-negative integer")
            if current is not None and not isinstance(current, str):
                raise ValueError("current_kernel must be a string or null")
            if not isinstance(latest, dict) or set(latest) != set(self._latest):
                raise ValueError(f"latest must have exactly the keys {sorted(self._latest)}")
            if not all(v is None or isinstance(v, (int, float)) for v in latest.values()):
                raise ValueError("latest values must be numbers or null")
            if not isinstance(tail, list) or not all(isinstance(x, str) for x in tail):
                raise ValueError("log_tail must be a list of strings")
            if not isinstance(exit_detected, bool) or not isinstance(block_ended, bool):
                raise ValueError("exit_detected and block_ended must be booleans")
            if block is not None and not (
                isinstance(block, dict) and isinstance(block.get("kernel_name"), str)
            ):
                raise ValueError("block must be null or an object with a string kernel_name")
        except KeyError as exc:
            raise ValueError(f"invalid LogParser state: missing {exc}") from None
        except ValueError as exc:
            raise ValueError(f"invalid LogParser state: {exc}") from None
        self._kernels_done = kernels_done
        self._current_kernel = current
        self._latest = {k: (None if v is None else float(v)) for k, v in latest.items()}
        self._tail = [_tail_line(x) for x in tail[-TAIL_LINES:]]
        self._exit_detected = exit_detected
        self._block = None if block is None else dict(block)
        self._repeats = {}
        self._block_ended = block_ended and block is not None

    # ---- parsing -------------------------------------------------------------------------

    def feed(self, lines: list[str]) -> list[ParsedKernel]:
        """Consume one chunk (lines without newlines, in seq order); return the kernels whose
        stats block completed in this chunk, in completion order."""
        n = len(lines)
        if not n:
            return []
        # "\n" before every line, the first included, so each marker is one substring search.
        text = "\n" + "\n".join(lines)
        # A "line" holding newlines is broken there like any other line. (A second join and a
        # memchr-speed `in` cost half of `text.count("\n")`.)
        if "\n" in "".join(lines):
            lines = text[1:].split("\n")
            n = len(lines)
        elif type(lines) is not list:  # the compiled reader takes a list (a tuple, a subclass)
            lines = list(lines)
        self._tail = (self._tail + [_tail_line(x) for x in lines[-TAIL_LINES:]])[-TAIL_LINES:]
        self._scan_launch(text)
        self._scan_rate(text)
        if not self._exit_detected and _EXIT in text:
            self._exit_detected = True

        done: list[ParsedKernel] = []
        if self._block_ended:
            done.append(self._finish_block())
        i = 0  # index of the first unread line
        while i < n:
            if self._block is None:
                # Outside blocks (a few dozen lines between kernels): find the next one.
                i = next((j for j in range(i, n) if lines[j].startswith(_FIRST_LINE)), n)
                if i == n:
                    break
                # kernel_name is taken raw here, so it always stays a string.
                self._block = {"kernel_name": lines[i][len(_FIRST_LINE) :].strip()}
                self._repeats = {}
                i += 1
            if len(_line_cache) >= _LINE_CACHE_LIMIT or len(_names_cache) >= _KEYS_CACHED_LIMIT:
                clear_caches()
            i, ended = _read_block_lines(
                self._block, lines, i, MAX_BLOCK_KEYS, self._repeats, _line_cache, _names_cache, _key_eq_value
            )
            if not ended:
                if i < n:  # a new block began before this one ended: it was cut off, drop it
                    self._block = None
                continue
            if i == n and not _SLOWDOWN_LINE_RE.fullmatch(lines[-1]):
                # Possibly cut mid-line (a killed simulator): wait for the next line.
                self._block_ended = True
                break
            done.append(self._finish_block())
        return done

    def _scan_launch(self, text: str) -> None:
        i = text.rfind(_LAUNCH)
        while i >= 0:
            m = _LAUNCH_RE.match(text, i + 1)
            if m:
                self._current_kernel = m.group(1)
                return
            i = text.rfind(_LAUNCH, 0, i)

    def _scan_rate(self, text: str) -> None:
        i = text.rfind(_RATE)
        while i >= 0:
            m = _RATE_RE.match(text, i + 1)
            if m:
                self._latest["sim_rate_ips"] = float(m.group(1))
                return
            i = text.rfind(_RATE, 0, i)

    def _finish_block(self) -> ParsedKernel:
        stats = self._block
        assert stats is not None, "called inside a block only"
        self._block = None
        self._block_ended = False
        names = str(stats["kernel_name"]).split(maxsplit=1)
        cycle = _as_int(stats.get("gpu_sim_cycle"))
        clock = self._clock_mhz
        kernel = ParsedKernel(
            kernel_index=self._kernels_done,
            kernel_name=names[0] if names else "",
            kernel_launch_uid=_as_int(stats.get("kernel_launch_uid")),
            gpu_sim_cycle=cycle,
            gpu_sim_insn=_as_int(stats.get("gpu_sim_insn")),
            gpu_ipc=_finite(stats.get("gpu_ipc")),
            sim_time_ns=(
                cycle / clock * 1000.0 if cycle is not None and clock > 0 and math.isfinite(clock) else None
            ),
            stats=stats,
        )
        self._kernels_done += 1
        latest = self._latest
        for key in _HEAD_KEYS:
            if key in stats:
                latest[key] = _finite(stats[key])
        return kernel
