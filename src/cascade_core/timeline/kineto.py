"""A PyTorch profiler (Kineto) Chrome trace -> the measured steps.

Kineto writes `traceEvents`; complete events (`ph: "X"`) have `ts`/`dur` in microseconds.
`cat: "kernel"` events ran on the GPU; the CPU-side launch (`cat: "cuda_runtime"` or
`"cuda_driver"`) carries the same `args.correlation`. A step is a CPU annotation whose name matches
the step pattern (`ProfilerStep#N`, what `prof.step()` records). A kernel belongs to the step
during which its launch happened on the CPU, even when it ran after the CPU moved on.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from cascade_core.bounded_read import (
    DECOMPRESS_ERRORS,
    PROFILE_MAX_BYTES,
    TooLargeError,
    decompress_bounded,
)
from cascade_core.step_kinds import StepKind
from cascade_core.timeline.formats import CorrectedTimeline, MeasuredKernel, MeasuredStep

DEFAULT_STEP_PATTERN = r"^ProfilerStep#\d+$"
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
# Categories that are GPU-side copies of CPU annotations (newer Kineto mirrors ProfilerStep there).
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"})
# Bounds on an event's times, in microseconds: Kineto's `ts` counts from the epoch or from the
# process start (1.7e15 us is 2023), and no step or kernel lasts a day. Past them a time is
# corrupt, and the nanosecond arithmetic below would overflow or yield 300-digit numbers.
MAX_TS_US = 1e17
MAX_DUR_US = 86_400e6
# A user annotation naming the phase as a word ("prefill", "Decode step"; not "decoder").
_KIND = re.compile(r"\b(prefill|decode)\b", re.IGNORECASE)


class ProfileError(ValueError):
    """A profile that cannot be used; the message is one line."""


@dataclass(frozen=True)
class ParsedProfile:
    timeline: CorrectedTimeline
    kernels_total: int  # GPU kernels in the profile
    kernels_outside_steps: int  # launched outside every step (or with no launch found)


def decode_profile(raw: bytes) -> dict[str, Any]:
    """The JSON document of a `.json` or `.json.gz` profile (gzip is recognised by its magic)."""
    try:  # bounded: a 1 MB gzip that expands to a GiB fails at PROFILE_MAX_BYTES
        raw = decompress_bounded(raw, PROFILE_MAX_BYTES, "the profile")
    except TooLargeError as exc:
        raise ProfileError(f"{exc} (real ones are tens of MB)") from None
    except DECOMPRESS_ERRORS as exc:
        raise ProfileError(f"not a PyTorch profiler (Kineto) trace: broken gzip ({exc})") from None
    try:
        doc = orjson.loads(raw)  # a real profile is tens of MB of JSON: 4x faster than json
    except orjson.JSONDecodeError as exc:
        raise ProfileError(f"not a PyTorch profiler (Kineto) trace: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ProfileError("not a PyTorch profiler (Kineto) trace: no 'traceEvents' list")
    return doc


def _events_by_category(events: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """Complete events (`ph: "X"` with numeric `ts` and `dur`) by lower-case category, in one
    pass: a real profile has tens of thousands."""
    found: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not _is_number(ts) or not _is_number(dur):
            continue
        if not (abs(ts) <= MAX_TS_US and 0 <= dur <= MAX_DUR_US):  # `not`: NaN fails every test
            raise ProfileError(
                f"event {str(e.get('name', ''))[:80]!r} has an impossible time (ts {ts:.6g} us, dur {dur:.6g} us; "
                f"a ts within ±{MAX_TS_US:g} us and a dur from 0 to {MAX_DUR_US:g} us are possible)"
            )
        cat = e.get("cat")
        found.setdefault(cat.lower() if isinstance(cat, str) else "", []).append(e)
    return found


def _is_number(value: Any) -> TypeGuard[int | float]:
    return type(value) in (int, float)  # not bool


def _correlation(event: dict[str, Any]) -> int | None:
    args = event.get("args")
    value = args.get("correlation") if isinstance(args, dict) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _device_name(doc: dict[str, Any]) -> str | None:
    props = doc.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        name = props[0].get("name")
        return name if isinstance(name, str) else None
    return None


def _outermost(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps by start, without those inside an earlier one (a pattern that also matches an
    annotation nested in a step), so that the steps do not overlap."""
    kept: list[dict[str, Any]] = []
    for step in steps:
        if not kept or step["ts"] >= kept[-1]["ts"] + kept[-1]["dur"]:
            kept.append(step)
    return kept


def parse_profile(doc: dict[str, Any], step_pattern: str = DEFAULT_STEP_PATTERN) -> ParsedProfile:
    """The measured steps of a decoded profile; raises ProfileError when it has no GPU kernel or
    no step annotation."""
    try:
        step_re = re.compile(step_pattern)
    except re.error as exc:
        raise ProfileError(f"--step-pattern {step_pattern!r} is not a regular expression: {exc}") from None
    by_category = _events_by_category(doc.get("traceEvents", []))
    kernels = by_category.get("kernel", [])
    if not kernels:
        raise ProfileError("the profile has no GPU kernels (record with ProfilerActivity.CUDA)")
    cpu = [e for cat, group in by_category.items() if cat not in GPU_CATEGORIES for e in group]
    steps = _outermost(
        sorted(
            (e for e in cpu if isinstance(e.get("name"), str) and step_re.search(e["name"])),
            key=lambda e: e["ts"],
        )
    )
    if not steps:
        raise ProfileError(
            f"the profile has no step annotation matching {step_pattern!r} "
            "(torch.profiler records ProfilerStep#N on each prof.step(); --step-pattern for other names)"
        )
    launch_ts = {
        corr: float(e["ts"])
        for cat in LAUNCH_CATEGORIES
        for e in by_category.get(cat, [])
        if (corr := _correlation(e)) is not None
    }
    origin = float(steps[0]["ts"])

    def ns(ts_us: float) -> int:
        return round((ts_us - origin) * 1000.0)

    spans = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in steps]
    starts = [start for start, _ in spans]
    # per step: (launch ts, kernel); NVBit numbers kernels in launch order, so steps keep it too
    members: list[list[tuple[float, MeasuredKernel]]] = [[] for _ in steps]
    outside = 0
    for k in kernels:
        corr = _correlation(k)
        launched = launch_ts.get(corr) if corr is not None else None
        slot = bisect.bisect_right(starts, launched) - 1 if launched is not None else -1
        if slot < 0 or launched is None or launched > spans[slot][1]:
            outside += 1
            continue
        args = k["args"] if isinstance(k.get("args"), dict) else {}
        stream = args.get("stream", k.get("tid", 0))
        members[slot].append(
            (
                launched,
                MeasuredKernel(
                    name=str(k.get("name", "")),
                    start_ns=ns(float(k["ts"])),
                    duration_ns=round(float(k["dur"]) * 1000.0),
                    stream=stream if isinstance(stream, int) else 0,
                    correlation=corr,
                ),
            )
        )
    annotations = by_category.get("user_annotation", [])
    measured = []
    for index, (step, (start, end)) in enumerate(zip(steps, spans)):
        members[index].sort(key=lambda pair: (pair[0], pair[1].correlation or 0))
        measured.append(
            MeasuredStep(
                index=index,
                name=step["name"],
                kind=_kind(annotations, step, start, end),
                cpu_start_ns=ns(start),
                cpu_wall_ns=round((end - start) * 1000.0),
                kernels=[kernel for _, kernel in members[index]],
            )
        )
    source = {"device": _device_name(doc), "step_pattern": step_pattern, "origin_ts_us": origin}
    return ParsedProfile(
        timeline=CorrectedTimeline(source=source, steps=measured),
        kernels_total=len(kernels),
        kernels_outside_steps=outside,
    )


def _kind(annotations: list[dict[str, Any]], step: dict[str, Any], start: float, end: float) -> StepKind:
    """`prefill` / `decode` when a user annotation inside the step names it, else `step`."""
    for a in annotations:
        if a is step or not (start <= float(a["ts"]) <= end):
            continue
        if match := _KIND.search(str(a.get("name", ""))):
            return "prefill" if match[1].lower() == "prefill" else "decode"
    return "step"
