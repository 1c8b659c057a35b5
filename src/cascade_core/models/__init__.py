"""The API contract: every request and response type, the state machines, and `run_state()`.

One module per aggregate (states, traces, sims, runs, kernels, results, configs, accuracy,
timelines, events; `common` for what they share), each importing only the ones below it. Every
public name is re-exported here: `from cascade_core.models import RunDetail` is the way in.

This package is imported by the server, the worker and the terminal UI, so it must stay light:
pydantic and the standard library only (never aiohttp, aiosqlite or boto3).
Field descriptions follow `spec/003-...`, section "Types".
"""

from __future__ import annotations

from .accuracy import AccuracyKernel, AccuracyPoint, AccuracyQuery, AccuracyRow
from .common import INT64_MAX, INT64_MIN, ListQuery, Model, utcnow
from .configs import ConfigOption, GpuConfig, GpuConfigAdd, GpuConfigFiles, LauncherStatus, SimulatorInfo
from .events import KernelEvent, KernelPowerAt, KernelPowerEvent, LogEvent, RunEvent, SimEvent, SnapshotEvent
from .kernels import Comparison, ComparisonRow, KernelPower, KernelStat
from .results import RunResults, SimResults
from .runs import (
    MAX_ENTRY_COUNT,
    MAX_RUN_ENTRIES,
    MAX_RUN_SIMS,
    RunCreate,
    RunDetail,
    RunEntry,
    RunListQuery,
    RunSummary,
    run_size_problem,
)
from .sampling import SamplingInfo
from .sims import (
    FILE_NAME_PATTERN,
    Heartbeat,
    HeartbeatAck,
    LogChunk,
    RunFile,
    ShardInfo,
    SimFile,
    SimMetrics,
    SimSummary,
)
from .states import (
    SIM_STATES,
    SIM_TRANSITIONS,
    TERMINAL_SIM_STATES,
    TRACE_TRANSITIONS,
    RunState,
    SimState,
    TraceState,
    can_transition,
    run_state,
)
from .timelines import SimStepTimeline, StepTimelineUpload
from .traces import KernelLaunch, TraceDetail, TraceListQuery, TraceSummary

__all__ = [
    "FILE_NAME_PATTERN",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ENTRY_COUNT",
    "MAX_RUN_ENTRIES",
    "MAX_RUN_SIMS",
    "SIM_STATES",
    "SIM_TRANSITIONS",
    "TRACE_TRANSITIONS",
    "TERMINAL_SIM_STATES",
    "AccuracyKernel",
    "AccuracyPoint",
    "AccuracyQuery",
    "AccuracyRow",
    "Comparison",
    "ComparisonRow",
    "ConfigOption",
    "GpuConfig",
    "GpuConfigAdd",
    "GpuConfigFiles",
    "Heartbeat",
    "HeartbeatAck",
    "KernelEvent",
    "KernelPower",
    "KernelPowerAt",
    "KernelPowerEvent",
    "KernelLaunch",
    "KernelStat",
    "LauncherStatus",
    "ListQuery",
    "LogChunk",
    "LogEvent",
    "Model",
    "RunCreate",
    "RunDetail",
    "RunEntry",
    "RunEvent",
    "RunFile",
    "SamplingInfo",
    "RunListQuery",
    "RunResults",
    "RunState",
    "RunSummary",
    "ShardInfo",
    "SimEvent",
    "SimFile",
    "SimMetrics",
    "SimResults",
    "SimState",
    "SimStepTimeline",
    "SimSummary",
    "SimulatorInfo",
    "SnapshotEvent",
    "StepTimelineUpload",
    "TraceDetail",
    "TraceListQuery",
    "TraceState",
    "TraceSummary",
    "can_transition",
    "run_size_problem",
    "run_state",
    "utcnow",
]
