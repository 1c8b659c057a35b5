"""How kernel sampling reads (issue 33): what a method saves on a trace, before a run, and what a
sampled sim's results are estimated from. Pure."""

from __future__ import annotations

from cascade_core.models import SamplingInfo


def _saving(info: SamplingInfo) -> str:
    """What sampling leaves out: `2.1x fewer` from half on, a share below that (`1.0x fewer`
    read as no saving at all for 1.5% fewer)."""
    if info.instructions and info.instructions_simulated:
        factor = info.instructions / info.instructions_simulated
        fewer = f"{factor:.1f}x" if factor >= 2 else f"{100 * (1 - 1 / factor):.1f}%"
        return f", {fewer} fewer warp instructions ({info.instructions_simulated:,} of {info.instructions:,})"
    return ""


def sampling_text(info: SamplingInfo) -> str:
    """`identical sampling: 12 of 15 kernels simulated, 1.5% fewer warp instructions (...),
    stated error of the total ±0.0%`: what a run would save, before it starts."""
    return (
        f"{info.method} sampling: {info.kernels_simulated} of {info.kernels} kernels simulated"
        f"{_saving(info)}, stated error of the total ±{info.error_pct:.1f}%"
    )


def estimate_note(info: SamplingInfo) -> str:
    """What a sampled sim's totals are: `estimated from 12 of 15 kernels (identical), ±0.0%`."""
    return (
        f"estimated from {info.kernels_simulated} of {info.kernels} kernels "
        f"({info.method}), ±{info.error_pct:.1f}% stated"
    )
