"""The agent prompt's "States" and "Types" sections, generated from the API's models
(`cascade_core.models`): every state and its moves from the state machines, every field of every
response type with its type as the model declares it. What the models cannot say (what a state
or a field means) is written once here, keyed by name; a key the models no longer have is an
error (`stale_notes`), so a note cannot outlive its field. Pure."""

from __future__ import annotations

import types
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from cascade_core import models
from cascade_core.models import RunState, SimState, TraceState

from .response_shape import omission_note

# The types an agent reads, in the order a reader meets them.
TYPES: tuple[type[BaseModel], ...] = (
    models.TraceSummary,
    models.TraceDetail,
    models.KernelLaunch,
    models.GpuConfig,
    models.GpuConfigAdd,
    models.LauncherStatus,
    models.SimulatorInfo,
    models.RunEntry,
    models.RunCreate,
    models.RunSummary,
    models.RunDetail,
    models.SimSummary,
    models.ShardInfo,
    models.SamplingInfo,
    models.SimMetrics,
    models.KernelStat,
    models.KernelPower,
    models.Comparison,
    models.ComparisonRow,
    models.SimResults,
    models.RunResults,
    models.SimStepTimeline,
    models.SimFile,
    models.RunFile,
    models.ConfigOption,
    models.AccuracyRow,
    models.AccuracyKernel,
    models.AccuracyPoint,
    models.SnapshotEvent,
    models.SimEvent,
    models.LogEvent,
    models.KernelEvent,
    models.KernelPowerEvent,
    models.KernelPowerAt,
)
# The types only a simulator sends or reads (spec 002): in the HTTP API reference, not the prompt.
SIMULATOR_TYPES: tuple[type[BaseModel], ...] = (
    models.Heartbeat,
    models.HeartbeatAck,
    models.LogChunk,
    models.StepTimelineUpload,
    models.GpuConfigFiles,
)
NAMED_LITERALS = {"TraceState": TraceState, "SimState": SimState, "RunState": RunState}
# The state machines whose moves each state's line names ("Next: ..."); a run's state is derived.
TRANSITIONS = {"TraceState": models.TRACE_TRANSITIONS, "SimState": models.SIM_TRANSITIONS}
# Unions a response is one of, by name: each is written before its first member.
UNIONS: dict[str, Any] = {"RunEvent": models.RunEvent}
UNION_NOTES = {"RunEvent": "one event on `GET /api/runs/{run_id}/events`; its `type` says which"}

STATE_NOTES: dict[str, dict[str, str]] = {
    "TraceState": {
        "uploading": "files arriving",
        "processing": "the upload is complete; the post-processor runs",
        "ready": "runs can launch; a deleted trace leaves the list, and its runs keep a `failed` record of it",
        "failed": "`error` says why; only a trace that failed for lack of disk space moves on, processed again "
        "once the server's disk has room",
    },
    "SimState": {
        "pending": "waiting for a free slot or the scheduler",
        "launching": "the launcher is starting it",
        "running": "it sent a `running` heartbeat",
        "lost": "no heartbeat for `CASCADE_HEARTBEAT_TIMEOUT_S` (60 s by default); a later heartbeat brings it "
        "back, and 10 times that long without one makes it `failed`",
        "succeeded": "it sent a `succeeded` heartbeat",
        "failed": "it sent a `failed` heartbeat, its launcher saw it end, or it stayed `lost` too long",
        "cancelled": "its run was cancelled before it finished",
    },
    "RunState": {
        "active": "a sim has not finished",
        "succeeded": "every sim succeeded",
        "partial": "every sim finished, some succeeded",
        "failed": "every sim failed",
        "cancelled": "every sim finished, one was cancelled, none succeeded",
    },
}

FIELD_NOTES: dict[str, dict[str, str]] = {
    "TraceSummary": {
        "id": "the name the trace was uploaded under",
        "error": "why it failed; null unless `failed`",
        "created_at": "when its first file landed",
        "model": "what was traced (metadata.json `model`)",
        "source_gpu": "the GPU it was traced on",
        "trace_gpu_arch": "the arch its configs must have, e.g. `sm_70`",
        "suggested_sim_config": "the config to use when the user names none",
        "kernel_count": "kernels its `kernelslist.g` names: what a sim simulates",
        "bytes": "bytes on disk",
        "has_real_timing": "real per-kernel times exist: the comparison has `real_ns`, MAPE can be computed",
        "has_step_timeline": "succeeded sims send step timing (`/step-timelines`)",
        "sample": "the sample trace, which cannot start a run",
    },
    "TraceDetail": {
        "metadata": "its metadata.json, parsed",
        "kernels": "its kernel launches, by `kernel_id`",
    },
    "KernelLaunch": {
        "name": "mangled kernel name",
        "instructions": "null if the kernel's trace was cut short",
    },
    "RunEntry": {
        "gpu_config": "a config whose `arch` is the trace's `trace_gpu_arch`",
        "count": "replicas of that config",
        "shards": "sims each replica is split into, each simulating a contiguous part of the trace's "
        "kernels at once; results merged (default 1: no split)",
        "warmup_kernels": "kernels each shard simulates before its part and drops (default 1)",
    },
    "RunCreate": {"entries": "one per config"},
    "RunSummary": {
        "sim_counts": "sims per state; states with none left out",
        "sample": "the sample run, real Accel-Sim output of the sample trace recorded elsewhere",
        "replay": "the sims replay a recorded Accel-Sim log (the stand-in) instead of simulating the trace",
        "started_at": "when its first sim started running",
        "finished_at": "when its last sim finished",
    },
    "RunDetail": {"sims": "sorted by `gpu_config`, then `replica`"},
    "SimSummary": {
        "replica": "0-based within its entry",
        "error": "why it failed or went `lost`; on a success, a warning (the kernels the simulator failed on)",
        "launcher_state": "what the scheduler says of its job (Slurm), while it waits or runs",
        "kernels_done": "kernels finished (simulated, or failed in the simulator)",
        "kernels_total": "kernels in the trace",
        "kernels_failed": "of `kernels_done`, kernels the simulator failed on",
        "current_kernel": "the kernel it is on, or last reached",
        "latest": "the totals so far",
        "log_tail": "the last 20 log lines",
        "shard": "which part of the trace a shard simulates; absent for a sim of the whole trace",
        "retry_of": "the failed sim this one retries in place (a sharded run's retry)",
    },
    "ShardInfo": {
        "kernel_first": "the first kernel it owns, as a `kernel_index`",
        "warmup_kernels": "kernels simulated before `kernel_first` whose stats are not the run's",
    },
    "SimMetrics": {"sim_rate_ips": "simulated instructions per second"},
    "KernelStat": {
        "kernel_index": "0-based order of completion (a shard's, or after a restart past a failed "
        "kernel: its position in the trace)",
        "kernel_name": "mangled",
        "sim_time_ns": "`gpu_sim_cycle / core_clock_mhz * 1000`, simulated time",
        "stats": "every `key = value` line of the block; empty in lists and events",
        "warmup": "a shard's warm-up kernel, only in that sim's own results",
        "failed": "a kernel the simulator failed on: its reason; the row has no results",
        "power": "AccelWattch's power, for a sim with `power: true`",
        "energy_j": "`power.avg_w` times `sim_time_ns`, in joules",
    },
    "Comparison": {"configs": "the run's configs in entry order", "rows": "one per kernel position"},
    "ComparisonRow": {"real_ns": "null without real timing", "sim_ns": "config -> median simulated ns"},
    "SimStepTimeline": {
        "simulated": "the predicted timeline: `steps`, `requests`, `summary.per_kind` and "
        "`summary.simulation.coverage` (how many kernels were simulated)",
        "compare": "errors against the real steps (`steps`, `requests`, `summary`), or null",
    },
    "SimFile": {"size": "bytes as stored"},
    "SnapshotEvent": {"run": "the run at connect time", "kernels": "every finished kernel, `stats` emptied"},
    "SimEvent": {"sim": "the sim after a change"},
    "LogEvent": {"lines": "new log lines"},
    "KernelEvent": {"stat": "a kernel that just finished"},
    "KernelPowerEvent": {"kernels": "each kernel's `kernel_index` and `power`, after its `kernel` event"},
    "Heartbeat": {
        "state": "`running` while working, `succeeded` or `failed` once at the end",
        "exit_code": "the simulator's exit code, with the final heartbeat",
        "error": "a short reason with `failed`; with `succeeded`, a warning (kept)",
    },
    "HeartbeatAck": {"state": "the sim's state after the heartbeat", "cancel": "stop simulating and exit"},
    "LogChunk": {
        "seq": "per sim, from 0, one more each chunk; a repeated one is ignored",
        "lines": "simulator output, without trailing newlines",
    },
    "AccuracyQuery": {
        "trace": "only this trace's rows",
        "points": "`true`: each row lists every compared kernel (`points`)",
    },
    "StepTimelineUpload": {
        "simulated": "`cascade simulate`'s output (`simulated_timeline.json`): `steps` and `summary`",
        "compare": "`cascade compare`'s output (`compare.json`) against the real timeline, or null",
    },
}


def type_name(annotation: Any) -> str:
    """A field's type as Python spells it: `str | None`, `list[RunEntry]`, `dict[SimState, int]`."""
    if annotation is type(None):
        return "None"
    for name, literal in NAMED_LITERALS.items():
        if annotation == literal:
            return name
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_name(args[0])
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in args)
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(type_name(arg) for arg in args)}]"
    if annotation is Any:
        return "Any"
    if annotation is datetime:
        return "datetime"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(info: Any) -> str:
    """The field's declared limits, in words: `from 1 to 64`, `at least 1 item`."""
    words = []
    for item in info.metadata:
        for attribute, word in (
            ("ge", "at least"),
            ("gt", "above"),
            ("le", "at most"),
            ("lt", "below"),
            ("min_length", "at least"),
            ("max_length", "at most"),
        ):
            value = getattr(item, attribute, None)
            if value is not None:
                unit = "" if not attribute.endswith("length") else " item" if value == 1 else " items"
                words.append(f"{word} {value}{unit}")
    return f" [{', '.join(words)}]" if words else ""


def field_line(model: type[BaseModel], name: str) -> str:
    """`- `name` (`type`) [bounds]: what it is. Omitted when default (...).`: the last sentence for
    a field the API leaves out of its answers at its default (`response_shape`)."""
    info = model.model_fields[name]
    note = info.description or FIELD_NOTES.get(model.__name__, {}).get(name) or ""
    if omitted := omission_note(model, name):
        note = f"{note.rstrip('.')}. {omitted}" if note else omitted
    return f"- `{name}` (`{type_name(info.annotation)}`){_bounds(info)}" + (f": {note}" if note else "")


def union_block(name: str) -> list[str]:
    """`### RunEvent` and what it is one of, from the union's own members."""
    union = UNIONS[name]
    if get_origin(union) is Annotated:
        union = get_args(union)[0]
    members = " | ".join(member.__name__ for member in get_args(union))
    return [f"### {name}", f"`{name}` is `{members}`: {UNION_NOTES[name]}.", ""]


def types_section(shown: Sequence[type[BaseModel]] = TYPES) -> str:
    """`### Model`, then one line per field: every field the model has, none it lacks."""
    parts = []
    unions_left = dict(UNIONS)
    for model in shown:
        for union_name, union in list(unions_left.items()):
            if model.__name__ in type_name(union).split(" | "):
                parts.extend(union_block(union_name))  # before its first member
                del unions_left[union_name]
        parts.append(f"### {model.__name__}")
        parents = [base for base in shown if base in model.__bases__]
        if parents:
            parents_fields = set(parents[0].model_fields)
            parts.append(f"Every field of `{parents[0].__name__}`, plus:")
            names = [name for name in model.model_fields if name not in parents_fields]
        else:
            names = list(model.model_fields)
        names = [name for name in names if not model.model_fields[name].exclude]  # never sent
        parts.extend(field_line(model, name) for name in names)
        parts.append("")
    parts.append(
        "Timestamps (`datetime`) are ISO 8601 strings in UTC. A field that says "
        '"Omitted when default" is left out of answers while it holds that value: read its absence '
        "as the default."
    )
    return "\n".join(parts).rstrip() + "\n"


def states_section() -> str:
    """Each state machine: every state, what it means, and (traces, sims) where it can move."""
    lines = []
    for name, literal in NAMED_LITERALS.items():
        lines.append(f"### {name}")
        for state in get_args(literal):
            note = STATE_NOTES[name].get(state, "")
            line = f"- `{state}`" + (f": {note}" if note else "")
            if (transitions := TRANSITIONS.get(name)) is not None:
                moves = [m for m in get_args(literal) if m in transitions[state]]
                line += ". Next: " + (", ".join(f"`{m}`" for m in moves) if moves else "none (final)")
            lines.append(line.rstrip(".") + ".")
        lines.append("")
    lines.append("A run's state is never stored: it is derived from its sims' states each time it is read.")
    return "\n".join(lines) + "\n"


def stale_notes() -> list[str]:
    """Notes for states or fields the models no longer have (a test keeps this empty)."""
    stale = [
        f"{kind}.{state}"
        for kind, notes in STATE_NOTES.items()
        for state in notes
        if state not in get_args(NAMED_LITERALS[kind])
    ]
    by_name: dict[str, type[BaseModel]] = {
        name: model
        for name, model in vars(models).items()
        if isinstance(model, type) and issubclass(model, BaseModel)
    }
    for model_name, notes in FIELD_NOTES.items():
        model = by_name.get(model_name)
        stale += [
            f"{model_name}.{field}" for field in notes if model is None or field not in model.model_fields
        ]
    return stale
