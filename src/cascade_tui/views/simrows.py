"""The sims table as data: which columns fit a width, each sim's cells, and sort orders.

Pure (no Textual): the table widget only paints what these functions return, so the layout at
80 columns, the cell texts and the sort behaviour are unit-tested here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from cascade_core.models import TERMINAL_SIM_STATES, SimSummary

from .formatting import (
    age,
    ellipsize,
    fixed,
    human_duration,
    progress_fraction,
    progress_text,
    run_took,
    short_kernel_name,
    si_number,
    state_label,
)
from .shard_text import shard_cell, shard_words

# A running sim whose last heartbeat is older than this is shown as stale (before the server's
# own timeout marks it `lost`), so a silent sim is visible early.
STALE_HEARTBEAT_S = 30.0


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0 = flexible (takes what is left)
    priority: int  # lower is kept first when the terminal is narrow
    align: str = "left"


# Widths fit the values (si_number gives at most 5 characters), so at 80 columns every column
# shows, the kernel / error column with at least FLEX_MIN (the log below has the whole error).
COLUMNS: tuple[Column, ...] = (
    Column("config", "config", 12, 0),
    Column("replica", "#", 2, 1, "right"),
    Column("state", "state", 11, 0),
    Column("progress", "kernels", 13, 0),
    Column("cycles", "cycles", 6, 2, "right"),
    Column("heartbeat", "beat", 5, 2, "right"),
    Column("ipc", "IPC", 5, 3, "right"),
    Column("rate", "rate/s", 6, 4, "right"),
    # From about 95 columns: how long the sim has run and, from its kernels done, how long to go.
    Column("elapsed", "time", 6, 5, "right"),
    Column("eta", "ETA", 6, 5, "right"),
    Column("kernel", "kernel (last when finished) / error", 0, 1),
)
FLEX_MIN = 11
SEPARATOR = 1
# A sharded run's table has this column after the replica: `2/3 k6-10 +1w` (shard_text.py).
SHARD_COLUMN = Column("shard", "shard", 15, 1)
# The config column is as wide as the longest config name (SM75_RTX2060 and SM75_RTX2060_S must
# both read whole), between its title with the sort arrow and a cap that leaves room for the rest.
CONFIG_MIN = len("config▲")
CONFIG_MAX = 20
# In a run with variants (entries with simulator options) the column names variants: so headed.
VARIANT_TITLE = "variant"

SORT_KEYS: tuple[str, ...] = ("config", "state", "progress", "cycles", "ipc", "rate", "heartbeat")

# Order states read in when sorting by state: problems first, then live work, then done.
_STATE_ORDER = {
    s: i
    for i, s in enumerate(("failed", "lost", "running", "launching", "pending", "cancelled", "succeeded"))
}


# Before a column is dropped for want of room, the kernels column's bar gives up to this many
# cells (a long config name such as SM75_RTX2060_S would otherwise push rate/s off at 80).
PROGRESS_SHRINK = 4
PROGRESS_COUNTS = 7
WIDE_ONLY = 5  # columns of this priority (time, ETA) come only when there is room to spare  # "123/456 ": the cells of the kernels column that are not the bar


@dataclass(frozen=True)
class Layout:
    columns: tuple[Column, ...]
    widths: tuple[int, ...]
    bar_width: int = 6  # the kernels column's bar


def config_width(names: Iterable[str], variants: bool = False) -> int:
    """The config column's width for these config (or variant) names."""
    least = len(f"{VARIANT_TITLE}▲") if variants else CONFIG_MIN
    return max(least, min(CONFIG_MAX, max((len(n) for n in names), default=0)))


def layout(width: int, config_cells: int = 12, sharded: bool = False, variants: bool = False) -> Layout:
    """The columns that fit `width` cells, keeping lower priorities first, in display order;
    the config column `config_cells` wide (see `config_width`), headed "variant" when the run
    has `variants`; with the shard column when `sharded`."""
    base = (*COLUMNS[:2], SHARD_COLUMN, *COLUMNS[2:]) if sharded else COLUMNS
    config_title = VARIANT_TITLE if variants else "config"
    columns = tuple(
        replace(c, width=config_cells, title=config_title) if c.key == "config" else c for c in base
    )
    overflow = sum(c.width + SEPARATOR for c in columns if c.priority < WIDE_ONLY) + FLEX_MIN - width
    if overflow > 0:
        columns = tuple(
            replace(c, width=c.width - min(PROGRESS_SHRINK, overflow)) if c.key == "progress" else c
            for c in columns
        )
    fixed_cols = [c for c in columns if c.width]
    flex = [c for c in columns if not c.width]
    chosen: set[str] = set()
    used = FLEX_MIN + SEPARATOR if flex else 0
    for col in sorted(fixed_cols, key=lambda c: c.priority):
        need = col.width + SEPARATOR
        if col.priority == 0 or used + need <= width:
            chosen.add(col.key)
            used += need
    cols = tuple(c for c in columns if c.key in chosen or not c.width)
    spare = width - sum(c.width + SEPARATOR for c in cols if c.width) - SEPARATOR
    widths = tuple(c.width if c.width else max(FLEX_MIN, spare) for c in cols)
    progress = next(c.width for c in columns if c.key == "progress")
    return Layout(cols, widths, bar_width=progress - PROGRESS_COUNTS)


@dataclass(frozen=True)
class Cell:
    text: str
    style: str = ""  # a style name the widget maps to a colour: "state-running", "error", "stale"


def heartbeat_seconds(sim: SimSummary, now: datetime) -> float | None:
    if sim.last_heartbeat_at is None:
        return None
    return (now - sim.last_heartbeat_at).total_seconds()


def elapsed_seconds(sim: SimSummary, now: datetime) -> float | None:
    """Seconds the sim has run: from its start to its end, or to now while it runs."""
    if sim.started_at is None:
        return None
    end = sim.finished_at or (now if sim.state not in TERMINAL_SIM_STATES else None)
    return None if end is None else max(0.0, (end - sim.started_at).total_seconds())


def eta_seconds(sim: SimSummary, now: datetime) -> float | None:
    """Seconds to go for a running sim at the rate it has finished kernels so far (None before
    its first kernel, and once it is done: no rate to go by, or nothing left)."""
    elapsed = elapsed_seconds(sim, now)
    if (
        sim.state not in ("running", "launching")
        or elapsed is None
        or sim.kernels_done <= 0
        or sim.kernels_total <= sim.kernels_done
    ):
        return None
    return elapsed / sim.kernels_done * (sim.kernels_total - sim.kernels_done)


def run_duration(created_at: datetime, sims: Iterable[SimSummary], now: datetime) -> str:
    """How long a run took: from its creation to its last sim's end, `took 4m12s`; or, while a
    sim is unfinished, `4m12s so far` (the server's RunSummary.finished_at, from live sims)."""
    sims = list(sims)
    ends = [s.finished_at for s in sims if s.finished_at is not None]
    done = bool(sims) and all(s.state in TERMINAL_SIM_STATES for s in sims)
    return run_took(created_at, max(ends) if done and ends else None, now)


def sim_cells(sim: SimSummary, now: datetime, bar_width: int = 6, name: str | None = None) -> dict[str, Cell]:
    """Every column's text for one sim (the widget picks the ones the layout kept)."""
    hb = heartbeat_seconds(sim, now)
    live = sim.state in ("running", "launching", "lost")
    stale = live and hb is not None and hb > STALE_HEARTBEAT_S
    if sim.error:
        last = Cell(sim.error, "error")
    elif sim.state in TERMINAL_SIM_STATES and sim.current_kernel:
        last = Cell(f"last: {short_kernel_name(sim.current_kernel)}", "")
    elif sim.state in ("pending", "launching") and (sim.launcher_state or _is_job_id(sim.launcher_ref)):
        last = Cell(queued_text(sim), "queued")
    else:
        last = Cell(short_kernel_name(sim.current_kernel), "")
    rate = sim.latest.sim_rate_ips
    return {
        "config": Cell(name or sim.label),  # a variant by what differs (sweep.sim_names)
        "replica": Cell(str(sim.replica)),
        "shard": Cell(shard_cell(sim.shard)),
        "state": Cell(state_label(sim.state), f"state-{sim.state}"),
        "progress": Cell(
            progress_text(sim.kernels_done, sim.kernels_total, bar_width)
            # kernels the simulator failed on are done but have no results: never a full bar alone
            + (f" {sim.kernels_failed}✗" if sim.kernels_failed else ""),
            "over" if sim.kernels_total and sim.kernels_done > sim.kernels_total else "",
        ),
        "cycles": Cell(si_number(sim.latest.gpu_tot_sim_cycle)),
        "ipc": Cell(fixed(sim.latest.gpu_tot_ipc, 1)),
        "rate": Cell(si_number(rate)),
        "heartbeat": Cell(age(sim.last_heartbeat_at, now) if live else "-", "stale" if stale else ""),
        "elapsed": Cell(human_duration(elapsed_seconds(sim, now))),
        "eta": Cell(human_duration(eta_seconds(sim, now))),
        "kernel": last,
    }


def _is_job_id(ref: str | None) -> bool:
    """A scheduler's job id (Slurm's `JOBID_TASK`), not a local launcher's pid."""
    return ref is not None and "_" in ref


def queued_text(sim: SimSummary) -> str:
    """A sim a scheduler holds: its job and what the scheduler says, `job 41_3 PENDING (Resources)`."""
    return " ".join(
        part
        for part in (f"job {sim.launcher_ref}" if sim.launcher_ref else "", sim.launcher_state or "")
        if part
    )


def row_texts(cells: dict[str, Cell], lay: Layout) -> tuple[tuple[str, str], ...]:
    """The row as fitted (text, style) pairs: what the widget paints and what the diff compares."""
    out = []
    for col, width in zip(lay.columns, lay.widths):
        cell = cells[col.key]
        text = ellipsize(cell.text, width)
        text = text.rjust(width) if col.align == "right" else text.ljust(width)
        out.append((text, cell.style))
    return tuple(out)


def header_texts(lay: Layout, sort_key: str, reverse: bool) -> tuple[str, ...]:
    arrow = "▼" if reverse else "▲"
    out = []
    for col, width in zip(lay.columns, lay.widths):
        title = col.title + (arrow if _sort_column(sort_key) == col.key else "")
        title = ellipsize(title, width)
        out.append(title.rjust(width) if col.align == "right" else title.ljust(width))
    return tuple(out)


def _sort_column(sort_key: str) -> str:
    return "config" if sort_key == "config" else sort_key


def sort_key_func(key: str, now: datetime) -> Callable[[SimSummary], tuple]:
    def num(v: float | None) -> float:
        return float("-inf") if v is None else v

    funcs: dict[str, Callable[[SimSummary], tuple]] = {
        "config": lambda s: (s.gpu_config, s.label, s.replica, s.shard.index if s.shard else 0),
        "state": lambda s: (_STATE_ORDER.get(s.state, 99), s.gpu_config, s.replica),
        "progress": lambda s: (
            progress_fraction(s.kernels_done, s.kernels_total),
            s.kernels_done,
            s.gpu_config,
            s.replica,
        ),
        "cycles": lambda s: (num(s.latest.gpu_tot_sim_cycle), s.gpu_config, s.replica),
        "ipc": lambda s: (num(s.latest.gpu_tot_ipc), s.gpu_config, s.replica),
        "rate": lambda s: (num(s.latest.sim_rate_ips), s.gpu_config, s.replica),
        "heartbeat": lambda s: (num(heartbeat_seconds(s, now)), s.gpu_config, s.replica),
    }
    return funcs[key]


def sorted_ids(
    sims: Iterable[SimSummary], key: str, reverse: bool, now: datetime, state_filter: str = "all"
) -> list[str]:
    keep = STATE_FILTERS[state_filter]
    return [s.id for s in sorted(sims, key=sort_key_func(key, now), reverse=reverse) if keep(s.state)]


# The sims table's state filter, in the order its key cycles through them.
STATE_FILTERS: dict[str, Callable[[str], bool]] = {
    "all": lambda state: True,
    "running": lambda state: state in ("running", "launching"),
    "failed": lambda state: state in ("failed", "lost"),
    "not succeeded": lambda state: state != "succeeded",
}


def no_match_text(state_filter: str) -> str:
    """What the log pane and the notice say when the filter hides every sim: that none matches
    it (not that none is running: sims are there, hidden)."""
    return f"no sim matches the filter '{state_filter}' (v: next filter)"


def next_state_filter(current: str) -> str:
    names = list(STATE_FILTERS)
    return names[(names.index(current) + 1) % len(names)] if current in names else names[0]


def next_sort_key(current: str, keys: Sequence[str] = SORT_KEYS) -> str:
    return keys[(keys.index(current) + 1) % len(keys)] if current in keys else keys[0]


DETAILS_TAIL_LINES = 12  # of the log, in the sim details dialog (the log pane has the rest)


def sim_details(sim: SimSummary, log_tail: Sequence[str], now: datetime) -> str:
    """Everything about one sim that a table row cuts at 80 columns, shown whole by Enter on it:
    its state, exit code, error and the end of its log."""
    out = [
        f"{sim.label} #{sim.replica}  {state_label(sim.state)}  ({sim.id})",
        *([shard_words(sim.shard)] if sim.shard else []),
        *([f"retries {sim.retry_of}"] if sim.retry_of else []),
        f"exit code: {'-' if sim.exit_code is None else sim.exit_code}"
        f"   ran: {human_duration(elapsed_seconds(sim, now))}"
        f"   kernels: {sim.kernels_done}/{sim.kernels_total}"
        + (f" ({sim.kernels_failed} failed in the simulator)" if sim.kernels_failed else ""),
    ]
    if sim.launcher_ref or sim.launcher_state:
        out.append(f"launcher: {queued_text(sim)}")
    label = "warning" if sim.state == "succeeded" else "error"  # a success names its failed kernels
    out.append(f"{label}: {sim.error}" if sim.error else "error: none")
    tail = list(log_tail)[-DETAILS_TAIL_LINES:]
    out += [
        "",
        f"Last {len(tail)} log lines (l: the whole log, L saves it):" if tail else "No log lines yet.",
    ]
    out += tail
    return "\n".join(out)
