"""The kernels view as lines of (text, style) segments: totals per config with the fastest named,
then per kernel one horizontal bar per config (and real time when the trace has it).

Pure: the widget maps style names to colours; tests read the text.
Style names: "title", "name", "dim", "warn", "real", "cfg0".."cfgN" (a config's colour), "best".
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence

from cascade_core.accuracy import error_pct
from cascade_core.models import ComparisonRow

from .compare import ConfigTotal, Ranking, kernel_share, kernel_spread, order_kernel_rows
from .formatting import bar, ellipsize, plural, short_kernel_name, si_number, time_ns
from .power import PowerCell, has_power, joules, watts
from .sweep import SweepView, baseline_note, kernel_multiple, sweep_sentence, swept_value_order

Segment = tuple[str, str]
Line = list[Segment]

# What the kernels view's numbers mean, for the run screen's `?` help.
KERNELS_HELP: tuple[tuple[str, str], ...] = (
    ("fastest", "the config with the least total simulated time; within 1% of it: a tie"),
    ("1.31x", "a config's total over the fastest's; in a sweep, `x base` over its unmodified config's"),
    ("share", "the kernel's part of its config's total simulated time"),
    ("Δ", "how much the configs disagree on the kernel: (slowest - fastest) / fastest"),
    ("~6.26 µs", "a sampled run: the kernel was not simulated, its time is its representative's"),
    (
        "MAPE",
        "with real timing: mean absolute percentage error, |simulated - real| / real averaged over "
        "the kernels; each bar's +x% is that kernel's signed error",
    ),
    (
        "57.3 W",
        "a power run (AccelWattch): the kernel's average power; ~ taken from its representative "
        "(sampling), as its time is; — the simulator's report had none for it",
    ),
    ("energy", "a power run: the energy of the kernels with power, and their average power"),
)

VALUE_WIDTH = 10
MIN_BAR = 8  # a bar narrower than this says nothing: the label is cut first
MIN_LABEL = 8


def _label_width(configs: Sequence[str], widest: int = 16) -> int:
    return max(6, min(widest, max((len(c) for c in configs), default=6)))


def _bar_line(
    label: str,
    label_w: int,
    value: float | None,
    scale: float,
    bar_w: int,
    style: str,
    suffix: Line | None = None,
    estimated: bool = False,
) -> Line:
    """`estimated`: the time is taken from a representative kernel (sampling): `~` says so."""
    frac = (value / scale) if (value is not None and scale > 0) else 0.0
    text = ("~" if estimated and value is not None else "") + time_ns(value)
    line: Line = [
        ("  " + ellipsize(label, label_w).ljust(label_w) + " ", "dim" if style == "real" else style),
        (bar(frac, bar_w) if value is not None else "-".ljust(bar_w), style if value is not None else "dim"),
        (" " + text.rjust(VALUE_WIDTH), ""),
    ]
    if suffix:
        line.extend(suffix)
    return line


MIN_SUFFIX = 20
POWER_CELL = 9  # `~1234.5 W`: a kernel's power, right-aligned after its time


def _total_suffix(
    total: ConfigTotal,
    ranking: Ranking,
    mape: Mapping[str, float | None],
    has_real_timing: bool,
    stand_in: str | None,
    sweep: SweepView | None = None,
) -> Line:
    """What follows a config's total bar: fastest / multiple / spread, or partial. In a sweep, a
    variant with its unmodified config in the run is a multiple of that (`base`)."""
    suffix: Line = []
    variant = sweep.variant(total.config) if sweep else None
    if total.partial:
        # No replica succeeded (yet): the total of the kernels finished so far.
        suffix.append((f"  partial: {total.kernels_done}/{total.kernels_total} kernels", "warn"))
    elif total.median_ns is not None:
        mult = ranking.multiples.get(total.config)
        if stand_in:
            pass  # placeholders: no fastest, no multiples
        elif sweep is not None and total.config in sweep.baselines:
            suffix.append(("  base", "best"))
        elif sweep is not None and variant is not None and variant.baseline is not None:
            base_mult = sweep.multiples.get(total.config)
            suffix.append((f"  {base_mult:.2f}x base" if base_mult is not None else "  base pending", ""))
        elif total.config in ranking.fastest:
            suffix.append(("  tie" if len(ranking.fastest) > 1 else "  fastest", "best"))
        elif mult is not None:
            suffix.append((f"  {mult:.2f}x", ""))
        if total.succeeded > 1 and total.low_ns is not None and total.high_ns is not None:
            low, high = time_ns(total.low_ns), time_ns(total.high_ns)
            # Identical replicas (the usual case: the simulator is deterministic) say so once.
            suffix.append(
                (f"  {low}..{high}" if low != high else f"  all {total.succeeded} replicas agree", "dim")
            )
    else:
        suffix.append((f"  no succeeded replica ({plural(total.replicas, 'sim')})", "dim"))
    err = mape.get(total.config)
    if has_real_timing and err is not None:
        suffix.append((f"  MAPE {err:.1f}%", ""))
    if total.cycles is not None:
        suffix.append((f"  {si_number(total.cycles)} cyc", "dim"))
    return suffix


def chart_lines(
    configs: Sequence[str],
    rows: Sequence[ComparisonRow],
    totals: Sequence[ConfigTotal],
    ranking: Ranking,
    mape: Mapping[str, float | None],
    has_real_timing: bool,
    width: int,
    stand_in: str | None = None,
    finished: bool = True,
    order: str = "trace",
    sweep: SweepView | None = None,
    failures: Mapping[int, Mapping[str, str]] | None = None,
    power: Mapping[int, Mapping[str, PowerCell]] | None = None,
) -> list[Line]:
    """`stand_in`: why the numbers are not a simulation (then no config is named fastest and no
    multiples are shown: they would compare placeholders; the screen's banner gives the reason,
    so it is not repeated here); `finished`: the run is over (else the totals are said to be so
    far); `sweep`: the run has variants (then each is named by what differs, and is a multiple of
    its unmodified config when the run has it); `failures`: kernel position -> config -> the
    simulator's reason, for kernels it failed on (their rows say so instead of a bar); `power`:
    kernel position -> config -> its power (`power.kernel_power`), a column after each kernel's
    time when some kernel has power."""
    names = sweep.names if sweep else {}
    failures = failures or {}
    power = power or {}
    show_power = has_power(power)

    def shown(cfg: str) -> str:
        return names.get(cfg, cfg)

    label_w = _label_width([shown(c) for c in configs], 24 if sweep else 16)
    style_of = {cfg: f"cfg{i % 6}" for i, cfg in enumerate(configs)}
    suffixes = {t.config: _total_suffix(t, ranking, mape, has_real_timing, stand_in, sweep) for t in totals}
    # The bars take what the longest suffix leaves ("  1.31x  MAPE 12.3%" or more), so no line
    # is wider than the pane; at least MIN_SUFFIX is kept so the bars do not jump as it changes.
    suffix_w = max([MIN_SUFFIX] + [sum(len(t) for t, _ in sfx) for sfx in suffixes.values()])
    if show_power:  # a kernel's bar then says its power, error and multiple: room for all three
        suffix_w = max(suffix_w, 2 + POWER_CELL + (9 if has_real_timing else 0) + (7 if sweep else 0))
    fixed = VALUE_WIDTH + suffix_w + 5
    label_w = min(label_w, max(MIN_LABEL, width - fixed - MIN_BAR))
    bar_w = max(MIN_BAR, width - label_w - fixed)
    lines: list[Line] = []

    title = "Total simulated time per " + ("variant" if sweep else "config") + ("" if finished else " so far")
    # A config with no succeeded replica yet shows its kernels so far: the note says both.
    note = "(median over succeeded replicas" + (", or so far)" if any(t.partial for t in totals) else ")")
    lines += _title(title, note, width)
    scale = max((t.median_ns or 0.0 for t in totals), default=0.0)
    for total in totals:
        lines.append(
            _bar_line(
                shown(total.config),
                label_w,
                total.median_ns,
                scale,
                bar_w,
                style_of[total.config],
                suffixes[total.config],
            )
        )
    if stand_in:
        # The run screen's banner says why, once: here only what it means for these totals.
        for text in textwrap.wrap(
            "No config is named fastest: these numbers compare nothing (the warning above says why).",
            max(20, width - 1),
        ):
            lines.append([(text, "dim")])
    else:
        style = "best" if ranking.fastest else "dim"
        if sweep is None:
            lines.append([(ranking.sentence(finished), style)])
        else:  # wrapped: variants' names are long
            for text in textwrap.wrap(
                sweep_sentence(ranking, names, sweep.multiples, finished), max(20, width - 1)
            ):
                lines.append([(text, style)])
    for total in totals:  # never presented as the whole trace
        if coverage := total.coverage_note():
            text = f"{shown(total.config)}: {coverage}; its total leaves them out."
            for part in textwrap.wrap(text, max(20, width - 1)):
                lines.append([(part, "warn")])
        if total.estimate:  # a sampled config's totals are estimates
            for part in textwrap.wrap(f"{shown(total.config)}: {total.estimate}.", max(20, width - 1)):
                lines.append([(part, "dim")])
    if any(t.power for t in totals):
        lines += _energy_lines(totals, shown, label_w, style_of, width, finished, sweep)
    if sweep is not None and (note := baseline_note(sweep.variants, names)):
        for text in textwrap.wrap(note, max(20, width - 1)):
            lines.append([(text, "dim")])
    if not has_real_timing:
        for text in textwrap.wrap(
            "This trace has no real timing, so there is no error against real time.", max(20, width - 1)
        ):
            lines.append([(text, "dim")])
    lines.append([])

    if not rows:
        lines.append([("No kernel has finished yet.", "dim")])
        return [_fit(line, width) for line in lines]
    # A spread between configs of stand-in numbers compares placeholders, as the banner says:
    # no Δ then (the order by spread still works, and says what it sorts on).
    lines += _title("Simulated time per kernel", f"(median over replicas; by {order}, o: order)", width)
    if stand_in:
        for text in textwrap.wrap("No Δ between configs: stand-in numbers.", max(20, width - 1)):
            lines.append([(text, "dim")])
    config_ns = {t.config: t.median_ns for t in totals if t.median_ns}
    for row in order_kernel_rows(rows, order):
        name = short_kernel_name(row.kernel_name) or "?"
        share, spread = kernel_share(row, config_ns), kernel_spread(row)
        facts = (f"  share {share:.1f}%" if share is not None else "") + (
            f"  Δ {spread:+.1f}%" if spread is not None and not stand_in else ""
        )
        lines.append(
            [
                (f"#{row.kernel_index} ", "dim"),
                (ellipsize(name, max(10, width - 8 - len(facts))), "name"),
                (facts, "dim"),
            ]
        )
        values = [v for v in row.sim_ns.values() if v is not None]
        if row.real_ns is not None:
            values.append(row.real_ns)
        group_scale = max(values, default=0.0)
        if has_real_timing:
            lines.append(_bar_line("real", label_w, row.real_ns, group_scale, bar_w, "real"))
        if row.failed and value_count(row) == 0:
            reasons = failures.get(row.kernel_index, {})
            by_reason: dict[str, list[str]] = {}  # configs that failed it for the same reason, together
            for cfg in row.failed:
                by_reason.setdefault(reasons.get(cfg, ""), []).append(shown(cfg))
            for reason, cfgs in by_reason.items():
                text = f"  failed in the simulator on {', '.join(cfgs)}" + (f": {reason}" if reason else "")
                for part in textwrap.wrap(text, max(20, width - 1), subsequent_indent="    "):
                    lines.append([(part, "warn")])
            continue
        for cfg in configs:
            value = row.sim_ns.get(cfg)
            if value is None and cfg in row.failed:  # in place of its bar: it has no time
                label = "  " + ellipsize(shown(cfg), label_w).ljust(label_w) + " "
                lines.append([(label, style_of[cfg]), ("failed in the simulator", "warn")])
                continue
            suffix = []
            if show_power:  # a column: blank for a config that does not simulate power
                cell = power.get(row.kernel_index, {}).get(cfg)
                suffix.append(("  " + (cell.text() if cell else "").rjust(POWER_CELL), "" if cell else "dim"))
            if has_real_timing and value is not None and row.real_ns and row.sim_kernel_name is None:
                suffix.append((f"  {error_pct(row.real_ns, value):+.1f}%", "dim"))
            variant = sweep.variant(cfg) if sweep and not stand_in else None
            if variant is not None and (mult := kernel_multiple(variant, row.sim_ns)) is not None:
                suffix.append((f"  {mult:.2f}x", ""))
            lines.append(
                _bar_line(
                    shown(cfg),
                    label_w,
                    value,
                    group_scale,
                    bar_w,
                    style_of[cfg],
                    suffix,
                    cfg in row.estimated,
                )
            )
    return [_fit(line, width) for line in lines]


def _energy_lines(
    totals: Sequence[ConfigTotal],
    shown: Callable[[str], str],
    label_w: int,
    style_of: Mapping[str, str],
    width: int,
    finished: bool,
    sweep: SweepView | None,
) -> list[Line]:
    """Under the totals of a power run: each config's energy and average power (AccelWattch),
    over the same replicas as its time; in a sweep, each config's variants by the swept value."""
    title = "Energy per " + ("variant" if sweep else "config") + ("" if finished else " so far")
    lines = _title(title, "(AccelWattch; average power over the kernels with power)", width)
    order = swept_value_order(sweep.variants) if sweep else []
    ranked = sorted(totals, key=lambda t: order.index(t.config) if t.config in order else len(order))
    for total in ranked:
        line: Line = [
            ("  " + ellipsize(shown(total.config), label_w).ljust(label_w) + " ", style_of[total.config])
        ]
        if not total.power:
            line.append(("no power simulated", "dim"))
        elif total.energy_j is None:
            line.append(("—", "dim"))
        else:
            line.append((f"energy {joules(total.energy_j)}", ""))
            if total.power_w is not None:
                line.append((f"  avg {watts(total.power_w)}", ""))
            if total.kernels_without_power:
                line.append((f"  {plural(total.kernels_without_power, 'kernel')} without power", "warn"))
        lines.append(line)
    return lines


def value_count(row: ComparisonRow) -> int:
    """How many configs have a simulated time for the kernel."""
    return sum(1 for v in row.sim_ns.values() if v is not None)


def _title(title: str, note: str, width: int) -> list[Line]:
    """A title with its dim note beside it, or under it, wrapped, when the pane is narrow."""
    if len(title) + 2 + len(note) <= width:
        return [[(title, "title"), ("  " + note, "dim")]]
    return [[(title, "title")], *([(text, "dim")] for text in textwrap.wrap(note, max(20, width - 1)))]


def _fit(line: Line, width: int) -> Line:
    """A line no wider than the pane, cut with an ellipsis: the widget would cut it silently. Only
    a pane narrower than the bars' fixed parts (label, value, suffix) ever needs it."""
    if sum(len(text) for text, _ in line) <= width:
        return line
    out: Line = []
    room = width - 1  # the ellipsis
    for text, style in line:
        if len(text) >= room:
            out.append((text[:room] + "…", style))
            break
        out.append((text, style))
        room -= len(text)
    return out


def plain(lines: Sequence[Line]) -> str:
    return "\n".join("".join(text for text, _ in line).rstrip() for line in lines)
