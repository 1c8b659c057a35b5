"""The accuracy table (`cascade accuracy` and the Accuracy screen): one record per trace and
variant, with readable numbers; and the worst kernels by demangled name. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from cascade_core.demangle import demangle
from cascade_core.models import AccuracyRow

from .formatting import short_kernel_name, time_ns
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
