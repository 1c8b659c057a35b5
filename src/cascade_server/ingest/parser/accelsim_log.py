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

Speed: about 97% of a real log is stats-block lines. They are read by `read_block_lines`
(accelsim_stats.py), the parser's hot loop. Launch, rate and exit lines are found with
`str.rfind`/`in` on newline-prefixed markers in the chunk joined once (Python's `re` is several
times slower per character than `str` methods). `benchmarks/bench_parser_vs.py` compares the
speed with the parser that kept first values only.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence

from cascade_core import log_notes
from cascade_core.log_notes import MAX_POSITIONS

from .accelsim_stats import (
    FIRST_LINE,
    STATS_LINE_MAX,
    block_stats,
    clear_cache,
    pair_bytes,
    parse_value,
    read_block_lines,
)
from .kernel import ParsedKernel, as_int, finite
from .log_tail import TAIL_LINE_MAX, TAIL_LINES, tail_line
from .restarts import Restarts
from .saved_state import STATE_VERSION, read_state

__all__ = [
    "LogParser",
    "ParsedKernel",
    "STATE_VERSION",
    "TAIL_LINES",
    "TAIL_LINE_MAX",
    "MAX_BLOCK_KEYS",
    "MAX_BLOCK_BYTES",
    "STATS_LINE_MAX",
    "clear_cache",
    "parse_value",
]

# A block that never closes (a corrupt stream) must not grow the saved state without bound;
# real blocks have about 1,000-3,000 `key = value` lines. Keys past this many are not kept.
MAX_BLOCK_KEYS = 50_000
# ... nor past about this many bytes of keys and values: 50,000 keys of lines near
# STATS_LINE_MAX would be some 50 MB, saved with every chunk. Real blocks are 100-300 KB.
MAX_BLOCK_BYTES = 4 * 1024 * 1024
# A block with fewer keys than this is within MAX_BLOCK_BYTES whatever its lines (each adds at
# most a line of STATS_LINE_MAX): it is measured only once it may pass them (real blocks, about
# 3,000 keys, rarely are).
_SURELY_FITS = MAX_BLOCK_BYTES // STATS_LINE_MAX
# Markers searched in the joined chunk, each with the newline that starts its line (the text
# starts with "\n").
_LAUNCH = "\nlaunching kernel name: "
_RATE = "\ngpgpu_simulation_rate = "
_EXIT = "\nGPGPU-Sim: *** exit detected ***"
_NOTE = "\n" + log_notes.PREFIX  # a line of the worker's own (cascade_core.log_notes)

# The uid is required: a launch line cut mid-name must not name a kernel.
_LAUNCH_RE = re.compile(r"launching kernel name: (\S+) uid: [0-9]")
# A complete last line of a block: `%ux`, or `Nan` from builds that guard a zero cycle rate.
_SLOWDOWN_LINE_RE = re.compile(r"gpgpu_silicon_slowdown = (?:[0-9]+x|[-+]?(?i:nan|inf)x?)\s*")
_RATE_RE = re.compile(r"gpgpu_simulation_rate = ([0-9]+(?:\.[0-9]*)?)[^\S\n]*\(inst/sec\)")
_HEAD_KEYS = ("gpu_tot_sim_cycle", "gpu_tot_sim_insn", "gpu_tot_ipc")


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
        "_block_bytes",
        "_restarts",
        "_limit",
        "_power",
    )

    def __init__(self, core_clock_mhz: float, state: dict | None = None, kernel_limit: int = MAX_POSITIONS):
        """`kernel_limit`: the trace positions the worker's notes may name (the trace's kernels): a
        note past them is no note, only a line of the log."""
        self._clock_mhz = float(core_clock_mhz)
        self._limit = kernel_limit
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
        # The (key, value) pairs of the block being read, in log order; None outside a block.
        self._block: list[tuple[str, float | str]] | None = None
        # What the block counts for MAX_BLOCK_BYTES (pair_bytes), once it may pass them; None
        # before it is measured (not saved: a restored parser measures it again).
        self._block_bytes: int | None = None
        # The block's last line arrived as the chunk's last line but does not look complete
        # (see _SLOWDOWN_LINE_RE); the next line proves it was, so the block is reported then.
        self._block_ended = False
        self._restarts = Restarts()  # past kernels the simulator failed on (restarts.py)
        # The worker's power notes read since take_power() (not saved: taken with each chunk).
        self._power: list[log_notes.KernelPowerNote] = []
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
        """Stats blocks finished (a restart's warm-up kernels among them)."""
        return self._kernels_done

    @property
    def kernels_dropped(self) -> int:
        """Of kernels_done, the restarts' warm-up kernels: never returned."""
        return self._restarts.dropped

    @property
    def kernels_placed(self) -> int:
        """Of kernels_done, the restarts' own kernels (returned `placed`)."""
        return self._restarts.placed

    @property
    def kernels_noted(self) -> int:
        """The sim's own kernels the worker's notes account for (placed or failed), each once."""
        return self._restarts.done

    @property
    def kernels_failed(self) -> int:
        """Kernels the simulator failed on (returned as `failed` kernels, with no block)."""
        return self._restarts.failed

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

    def take_power(self) -> list[log_notes.KernelPowerNote]:
        """The kernels' power the worker's notes gave since the last call (a power sim's: each
        kernel's note follows its stats block; at its trace position, warm-up kernels left out)."""
        taken, self._power = self._power, []
        return taken

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
            "block": None if self._block is None else list(self._block),
            "block_ended": self._block_ended,
            **self._restarts.state(),
        }

    def _restore(self, state: dict) -> None:
        saved = read_state(state, set(self._latest))
        self._kernels_done = saved.kernels_done
        self._current_kernel = saved.current_kernel
        self._latest = saved.latest
        self._tail = [tail_line(x) for x in saved.log_tail[-TAIL_LINES:]]
        self._exit_detected = saved.exit_detected
        self._block = saved.block
        self._block_bytes = None
        self._block_ended = saved.block_ended and saved.block is not None
        self._restarts = saved.restarts

    # ---- parsing -------------------------------------------------------------------------

    def feed(self, lines: list[str]) -> list[ParsedKernel]:
        """Consume one chunk (lines without newlines, in seq order); return the kernels whose
        stats block completed in this chunk, in completion order."""
        if not lines:
            return []
        # "\n" before every line, the first included, so each marker is one substring search.
        text = "\n" + "\n".join(lines)
        # A "line" holding newlines is broken there like any other line. (A second join and a
        # memchr-speed `in` cost half of `text.count("\n")`.)
        if "\n" in "".join(lines):
            lines = text[1:].split("\n")
        return self._feed(lines, text)

    def feed_text(self, text: str) -> list[ParsedKernel]:
        """Consume one chunk given as its text, every line ending in a newline (`chunk_text`;
        a last line without one is a line too): as `feed` of its lines, without joining them
        again to search the text (the ingest workers are sent the text)."""
        lines = text.split("\n")
        if not lines[-1]:
            lines.pop()
        if not lines:
            return []
        return self._feed(lines, "\n" + text)

    def _feed(self, lines: Sequence[str], text: str) -> list[ParsedKernel]:
        """`lines`, and their text with a newline before each line."""
        if _NOTE not in text:
            return self._feed_output(lines, text)
        # The worker's notes between simulators (rare: once per failed kernel): the lines
        # between them are the simulators' output, each note applies where it stands.
        done: list[ParsedKernel] = []
        start = 0
        for i, line in enumerate(lines):
            if not line.startswith(log_notes.PREFIX):
                continue
            if (power := log_notes.parse_power(line, self._limit)) is not None:
                self._power.append(power)  # a line of the log like any other, besides
                continue
            note = log_notes.parse_failure(line, self._limit) or log_notes.parse_restart(line, self._limit)
            if note is None:
                continue
            if i > start:
                part = lines[start:i]
                done += self._feed_output(part, "\n" + "\n".join(part))
            self._tail = (self._tail + [tail_line(line)])[-TAIL_LINES:]
            done += self._apply(note)
            start = i + 1
        if start < len(lines):
            part = lines[start:]
            done += self._feed_output(part, "\n" + "\n".join(part))
        return done

    def _apply(self, note: log_notes.KernelFailure | log_notes.Restart) -> list[ParsedKernel]:
        """A simulator ended: a block it was printing is whole if its last line came (that line
        may be cut), else cut off. Then a failed kernel, or the next simulator's kernels."""
        done = self._place([self._finish_block()] if self._block_ended else [])
        self._block, self._block_bytes, self._block_ended = None, None, False
        if isinstance(note, log_notes.Restart):
            self._restarts.begin(note, self._kernels_done, self._latest)
            self._current_kernel = None
            return done
        return [*done, self._restarts.failed_kernel(note)]

    def _feed_output(self, lines: Sequence[str], text: str) -> list[ParsedKernel]:
        """Simulator output: `lines`, and their text with a newline before each line."""
        n = len(lines)
        self._tail = (self._tail + [tail_line(x) for x in lines[-TAIL_LINES:]])[-TAIL_LINES:]
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
                i = next((j for j in range(i, n) if lines[j].startswith(FIRST_LINE)), n)
                if i == n:
                    break
                # kernel_name is taken raw here, so it always stays a string.
                self._block = [("kernel_name", lines[i][len(FIRST_LINE) :].strip())]
                self._block_bytes = None
                i += 1
            before = len(self._block)
            if self._block_bytes is None and before + (n - i) >= _SURELY_FITS:
                self._block_bytes = sum(map(pair_bytes, self._block))  # once per block
            i, ended = read_block_lines(
                self._block,
                lines,
                i,
                MAX_BLOCK_KEYS,
                None if self._block_bytes is None else MAX_BLOCK_BYTES - self._block_bytes,
            )
            if self._block_bytes is not None:  # what was added, not the whole block again
                self._block_bytes += sum(map(pair_bytes, itertools.islice(self._block, before, None)))
            if not ended:
                if i < n:  # a new block began before this one ended: it was cut off, drop it
                    self._block, self._block_bytes = None, None
                continue
            if i == n and not _SLOWDOWN_LINE_RE.fullmatch(lines[-1]):
                # Possibly cut mid-line (a killed simulator): wait for the next line.
                self._block_ended = True
                break
            done.append(self._finish_block())
        return self._place(done)

    def _place(self, done: list[ParsedKernel]) -> list[ParsedKernel]:
        """Kernels of a simulator a note describes, at their trace positions (restarts.py), and
        the sim's totals over its own kernels: the simulator's own gpu_tot_* count from its
        start, warm-up kernels included."""
        if self._restarts.positions is None:
            return done
        placed = self._restarts.place(done)
        if done:
            self._latest.update(self._restarts.totals())
        return placed

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
                self._latest["sim_rate_ips"] = finite(float(m.group(1)))  # (400 digits: inf)
                return
            i = text.rfind(_RATE, 0, i)

    def _finish_block(self) -> ParsedKernel:
        assert self._block is not None, "called inside a block only"
        stats = block_stats(self._block)
        self._block, self._block_bytes = None, None
        self._block_ended = False
        names = str(stats["kernel_name"]).split(maxsplit=1)
        cycle = as_int(stats.get("gpu_sim_cycle"))
        clock = self._clock_mhz
        kernel = ParsedKernel(
            kernel_index=self._kernels_done,
            kernel_name=names[0] if names else "",
            kernel_launch_uid=as_int(stats.get("kernel_launch_uid")),
            gpu_sim_cycle=cycle,
            gpu_sim_insn=as_int(stats.get("gpu_sim_insn")),
            gpu_ipc=finite(stats.get("gpu_ipc")),
            sim_time_ns=(  # finite: a tiny clock of a run stored before clocks were bounded
                finite(cycle / clock * 1000.0)
                if cycle is not None and clock > 0 and math.isfinite(clock)
                else None
            ),
            stats=stats,
        )
        self._kernels_done += 1
        latest = self._latest
        for key in _HEAD_KEYS:
            if key in stats:
                latest[key] = finite(stats[key])
        return kernel
