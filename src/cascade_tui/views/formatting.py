"""Text for the screens: demangled kernel names, sizes, ages, numbers, progress bars.

Pure functions with no Textual import, so they are unit-tested on their own and shared by every
screen. Everything returns plain `str`; colour is decided by the widgets.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from cascade_core.demangle import demangle
from cascade_core.models import SimState

# Glyph + word for each state, so a state never depends on colour alone (16-colour terminals,
# colour-blind operators, copy-pasted screens).
STATE_GLYPHS: dict[str, str] = {
    "pending": "·",
    "launching": "↑",
    "running": "▶",
    "lost": "?",
    "succeeded": "✔",
    "failed": "✘",
    "cancelled": "■",
    # traces and runs
    "uploading": "↑",
    "processing": "⚙",
    "ready": "✔",
    "active": "▶",
    "partial": "◐",
}


# The one order sim states are counted in (run header, runs list): live work first, then what
# needs a look, then what is done.
STATE_DISPLAY_ORDER: tuple[SimState, ...] = (
    "running",
    "launching",
    "pending",
    "lost",
    "succeeded",
    "failed",
    "cancelled",
)


def state_label(state: str) -> str:
    """`✔ succeeded`: the glyph and the state spelled out."""
    return f"{STATE_GLYPHS.get(state, ' ')} {state}"


_ANONYMOUS = "(anonymous namespace)"


@lru_cache(maxsize=4096)
def short_kernel_name(name: str | None) -> str:
    """The demangled name without its parameter list, e.g. `void dot_kernel<double>`
    -> `dot_kernel<double>`: what fits in a table column."""
    full = demangle(name)
    if not full:
        return ""
    # Cut the argument list: the first top-level '(' (templates and lambdas `{lambda(int)#1}` may
    # hold parentheses), never the one of `(anonymous namespace)`, which is part of the name
    # (`at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>` in PyTorch).
    depth, cut, i = 0, len(full), 0
    while i < len(full):
        ch = full[i]
        if full.startswith(_ANONYMOUS, i):
            i += len(_ANONYMOUS)
            continue
        if ch in "<{":
            depth += 1
        elif ch in ">}":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            cut = i
            break
        i += 1
    head = full[:cut].strip()
    # Drop a leading return type ("void ") kept by the demangler for templates.
    if head.startswith("void "):
        head = head[5:]
    return head or full


def human_bytes(n: int | float | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"  # pragma: no cover - loop always returns


def human_duration(seconds: float | None) -> str:
    """`42s`, `3m05s`, `2h10m`, `4d3h`: compact, for ages and heartbeats."""
    if seconds is None or math.isnan(seconds):
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600}h"


def age(then: datetime | None, now: datetime) -> str:
    if then is None:
        return "-"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration((now - then).total_seconds())


def run_seconds(created_at: datetime, finished_at: datetime | None, now: datetime) -> float:
    """How long a run took: from its creation (queueing included, as the operator waited) to
    its end, or to now while it has none."""
    return max(0.0, ((finished_at or now) - created_at).total_seconds())


def run_took(created_at: datetime, finished_at: datetime | None, now: datetime) -> str:
    """`took 4m12s` for a run that ended, `4m12s so far` for one that has not."""
    seconds = human_duration(run_seconds(created_at, finished_at, now))
    return f"took {seconds}" if finished_at is not None else f"{seconds} so far"


def si_number(value: float | None, digits: int = 3) -> str:
    """`76.7k`, `26.6M`, `1.2G`: large counts (cycles, instructions, rates) in few columns."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    v = float(value)
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.{digits}g}{unit}"
    if v == int(v):
        return str(int(v))
    return f"{v:.{digits}g}"


def fixed(value: float | None, places: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{places}f}"


def time_ns(value: float | None) -> str:
    """A simulated or real time given in nanoseconds, in the unit that reads best."""
    if value is None or math.isnan(value):
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} ns"


def progress_fraction(done: int, total: int) -> float:
    """Capped at 1: the stand-in can finish more kernels than the trace has."""
    if total <= 0:
        return 1.0 if done > 0 else 0.0
    return max(0.0, min(1.0, done / total))


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int) -> str:
    """A horizontal bar `width` cells wide with eighth-cell resolution (`█` + partial)."""
    if width <= 0:
        return ""
    fraction = max(0.0, min(1.0, fraction if not math.isnan(fraction) else 0.0))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text.ljust(width)


def progress_text(done: int, total: int, bar_width: int = 8) -> str:
    """`12/20 ██████▍  ` : counts as they are (never capped), bar capped at 100%."""
    return f"{done}/{total} {bar(progress_fraction(done, total), bar_width)}"


def ellipsize(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…"


def sentence(text: str) -> str:
    """`run r-1 is active` -> `Run r-1 is active`: only the first letter changes."""
    return text[:1].upper() + text[1:]


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 sim`, `2 sims`, `1,200 lines`: a count with its noun in the right number."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def saved_message(paths: list[Path], home: Path | None = None) -> str:
    """What a download toast says: the file name whole on its own line, then the directory (with
    `~` for the home directory), so a narrow toast never wraps a name in the middle."""
    if not paths:
        return "Nothing saved."
    folder = paths[0].parent
    shown = str(folder)
    for base, prefix in ((Path.cwd(), "./"), (Path.home() if home is None else home, "~/")):
        try:
            shown = prefix + str(folder.relative_to(base))
            break
        except ValueError:
            continue
    head = paths[0].name if len(paths) == 1 else plural(len(paths), "file")
    return f"{head}\nin {shown}"


def s3_problem(health: dict) -> str | None:
    """What the Traces screen says while the server's S3 endpoint fails (`s3_error` in
    /api/health: its last scan failed), else None."""
    error = health.get("s3_error")
    if not error:
        return None
    endpoint = health.get("s3_endpoint") or "the S3 endpoint"
    return f"⚠ S3 endpoint {endpoint} is failing, so new uploads are not seen until it answers again: {error}"
