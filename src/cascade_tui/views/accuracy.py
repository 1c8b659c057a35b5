"""The accuracy table (`cascade accuracy` and the Accuracy screen): one record per trace and
variant, with readable numbers; and the worst kernels by demangled name. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from cascade_core.demangle import demangle
from cascade_core.models import AccuracyRow

from .columns import ColumnSpec, fit
from .formatting import ellipsize, short_kernel_name, time_ns
from .output import Column, Record


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def signed_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def r_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


ACCURACY_COLUMNS = (
    Column("trace_id", "trace"),
    Column("label", "variant"),
    Column("gpu_config", "config", in_table=False),
    Column("options", "options", in_table=False),
    Column("sims", "sims", right=True),
    Column("kernels", "kernels", right=True),
    Column("mape_pct", "MAPE", pct, right=True),
    Column("mean_error_pct", "bias", signed_pct, right=True),
    Column("pearson_r", "r (log)", r_text, right=True),
    Column("step_wall_error_pct", "step err", pct, right=True),
    Column("worst", "worst kernel"),
)


def worst_text(row: AccuracyRow) -> str | None:
    if not row.worst:
        return None
    top = row.worst[0]
    return f"{short_kernel_name(demangle(top.kernel_name))} {signed_pct(top.error_pct)}"


def accuracy_records(rows: Sequence[AccuracyRow], table: bool = True) -> list[Record]:
    """Flat records: `worst` is the worst kernel in words for the table and CSV."""
    return [
        {
            "trace_id": r.trace_id,
            "label": r.label,
            "gpu_config": r.gpu_config,
            "options": " ".join(f"{k}={v}" for k, v in r.options.items()) or None,
            "sims": r.sims,
            "kernels": r.kernels,
            "mape_pct": r.mape_pct,
            "mean_error_pct": r.mean_error_pct,
            "pearson_r": r.pearson_r,
            "step_wall_error_pct": r.step_wall_error_pct,
            "worst": worst_text(r),
        }
        for r in rows
    ]


def worst_lines(row: AccuracyRow) -> list[str]:
    """`+212.0%  1.2 µs real, 3.7 µs simulated  sgemm_tiled<64, 64, 16>(...)`, worst first."""
    return [
        f"{signed_pct(k.error_pct):>9}  {time_ns(k.real_ns)} real, {time_ns(k.sim_ns)} sim  "
        f"{short_kernel_name(demangle(k.kernel_name))}"
        for k in row.worst
    ]


# What the Accuracy screen's columns mean, for its `?` help (and the run screen's MAPE).
ACCURACY_HELP: tuple[tuple[str, str], ...] = (
    ("kernels", "kernels with both a real and a simulated time, compared"),
    (
        "MAPE",
        "mean absolute percentage error: the mean of |simulated - real| / real over those kernels; "
        "0% is exact, 50% is off by half on average, either way",
    ),
    (
        "bias",
        "the mean signed error, (simulated - real) / real: above 0 the simulator is slow on "
        "average (its times too long), below 0 fast; errors either way cancel, so read it with MAPE",
    ),
    (
        "r (log)",
        "Pearson correlation of log real time and log simulated time over the kernels: 1 means "
        "the simulator orders kernels by time as the hardware does, even when MAPE is large",
    ),
    ("step err", "traces with a step timeline: mean absolute error of the predicted step wall time"),
    ("worst", "the kernel with the largest |error|; the pane beside the chart lists five"),
)

# The table's columns: (record key, title, narrowest, widest, priority: lower kept first).
_TABLE = (
    ("trace_id", "trace", 8, 32, 1),
    ("label", "variant", 9, 40, 0),
    ("sims", "sims", 4, 4, 5),
    ("kernels", "kernels", 7, 7, 3),
    ("mape_pct", "MAPE", 6, 7, 0),
    ("mean_error_pct", "bias", 6, 8, 2),
    ("pearson_r", "r (log)", 7, 7, 2),
    ("step_wall_error_pct", "step err", 8, 8, 4),
)
_CELL = {"mape_pct": pct, "mean_error_pct": signed_pct, "pearson_r": r_text, "step_wall_error_pct": pct}


def table_layout(
    rows: Sequence[AccuracyRow], width: int
) -> tuple[list[tuple[str, str, int]], list[list[str]]]:
    """The Accuracy screen's table in `width` cells, never wider: (key, title, width) of each
    column kept (the least useful dropped first when narrow), and the rows' cells, a trace or
    variant too long for its column cut with `…` (the pane under the table says them whole)."""
    cells = [
        [_CELL.get(key, str)(record[key]) if record[key] is not None else "-" for key, _, _, _, _ in _TABLE]
        for record in accuracy_records(rows)
    ]
    # A column with nothing to say (no trace has step timing: every cell `-`) gives its cells
    # to the names.
    shown = [i for i in range(len(_TABLE)) if i < 2 or any(row[i] != "-" for row in cells)]
    specs = [ColumnSpec(*_TABLE[i][1:]) for i in shown]
    widths = fit(specs, [[row[i] for i in shown] for row in cells], width)
    kept = [(i, w) for i, w in zip(shown, widths) if w is not None]
    columns = [(_TABLE[i][0], _TABLE[i][1], w) for i, w in kept]
    return columns, [[middle_cut(row[i], w) for i, w in kept] for row in cells]


def middle_cut(text: str, width: int) -> str:
    """`SM7_QV100[gp…clusters=40]`: a name cut in its middle, so its end (a variant's value, a
    trace's arch) still shows."""
    if len(text) <= width:
        return text
    if width < 8:
        return ellipsize(text, width)
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[-tail:]
