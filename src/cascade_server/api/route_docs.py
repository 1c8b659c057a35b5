"""What each route of the app is, written once, keyed by method and path: what it does, its query,
body and response types, its success status and the errors of its own. The route tables say the
methods and paths, the models the types, the auth middleware who may call; this table adds what
none of them can. The agent prompt's API table (agent_prompt_routes) and the HTTP API reference
(api_reference, docs/reference/api.md) are both generated from it, and tests keep it whole: a
route without an entry, an entry for a route the app no longer has, or a body, query or status
that the route's handler does not read or send is an error."""

from __future__ import annotations

from cascade_core import models
from cascade_core.models import MAX_ENTRY_COUNT, MAX_RUN_ENTRIES, MAX_RUN_SIMS

from .config_route_docs import CONFIG_ROUTE_DOCS
from .route_doc import BAD_FILE_NAME, PATH_PARAMS, SIMULATOR_ONLY, RouteDoc
from .trace_input_routes import NoQuery

__all__ = ["PATH_PARAMS", "ROUTE_DOCS", "SIMULATOR_ONLY", "RouteDoc"]

NO_TRACE = (404, "No trace has this id.")
NO_RUN = (404, "No run has this id.")
NO_SIM = (404, "No sim has this id.")
NO_RUN_OR_TRACE = (404, "No run has this id, or its trace was deleted.")
TRACE_GONE = (
    409,
    "The run's trace was deleted and another trace was uploaded under its id since: start a new run on it.",
)
RUN_CREATE_ERRORS = (
    (404, "`trace_id` names no trace."),
    (
        409,
        "The trace is not `ready`, is a sample (which has no instruction traces), or is being deleted; "
        "or the Slurm launcher cannot submit.",
    ),
    (
        422,
        "The installed simulator cannot simulate the trace's arch at all (sm_90 on the pinned Accel-Sim: "
        "`detail` names the GPUs and says to install a newer Accel-Sim); "
        f"an entry names an unknown `gpu_config` or one whose `arch` is not the trace's `trace_gpu_arch`; "
        f"`count` is outside 1..{MAX_ENTRY_COUNT}; options the config or simulator do not know, or two "
        f"entries with the same variant or label; or the run is too large: more than "
        f"{MAX_RUN_ENTRIES:,} entries, or more than {MAX_RUN_SIMS:,} sims in all (the sum of `count` x "
        "`shards` over the entries), a sentence naming the figure and the limit, checked before anything "
        "is stored.",
    ),
)

ROUTE_DOCS: dict[tuple[str, str], RouteDoc] = {
    ("GET", "/api/health"): RouteDoc(
        "Liveness: `ok`, `auth`, `workspace`, `s3_endpoint`, `s3_error` (why the S3 endpoint "
        "is failing, or null). Needs no token.",
        returns="a JSON object: `ok` (true), `auth` (false only with `CASCADE_NO_AUTH=1`), "
        "`workspace` (`CASCADE_WORKSPACE` or null), `s3_endpoint`, `s3_error`",
        details="`s3_error` says why the S3 endpoint is failing: the last scan's error, e.g. it is "
        "unreachable, or a listing unanswered for over 10 s; `null` once a scan works. Health checks "
        "nothing itself: it answers while the server serves requests.",
    ),
    ("GET", "/api/launcher"): RouteDoc(
        "Where new sims go and how busy it is: `name`, `slots`, `running`, `queued`, "
        "`partition` (a `LauncherStatus`).",
        response=models.LauncherStatus,
        details="Not in the spec. `local`: its slots, workers running and sims waiting for a slot; "
        "`slurm`: Cascade's jobs running and waiting in Slurm's queue and the partition (`null`: the "
        "cluster's default); `manual`: the name only (every sim waits for you). `simulator` says which "
        "simulator new sims run.",
    ),
    ("GET", "/api/traces"): RouteDoc(
        "Every trace, newest first. `?state=` (repeatable) and `?limit=` filter.",
        response=list[models.TraceSummary],
        query=models.TraceListQuery,
        details="A list parameter takes repeats or commas: `?state=ready,failed`.",
    ),
    ("GET", "/api/traces/{trace_id}"): RouteDoc(
        "One trace with its metadata and kernels (a `TraceDetail`).",
        response=models.TraceDetail,
        errors=(NO_TRACE,),
    ),
    ("GET", "/api/gpu-configs"): RouteDoc(
        "The GPU configs a run can use.",
        response=list[models.GpuConfig],
        details="The installed simulator's tested configs (`cascade simulator install` adds "
        "`SM80_A100`, which the pinned Accel-Sim does not ship) and the configs added with `POST "
        "/api/gpu-configs` (`added` true), sorted by name. Without a real simulator, the stand-in's "
        "sample configs.",
    ),
    **CONFIG_ROUTE_DOCS,  # adding and removing configs: config_route_docs.py
    ("POST", "/api/runs"): RouteDoc(
        "Launch sims for a ready trace (body: `RunCreate`): `201` with the `RunDetail`.",
        response=models.RunDetail,
        status=201,
        body=models.RunCreate,
        errors=RUN_CREATE_ERRORS,
        details="Each entry fans out to `count` replicas (each split into `shards` sims). The answer "
        'comes before any sim has launched. Fields it does not know are refused (`"dry_run": true` '
        "is a 422, not ignored).",
    ),
    ("GET", "/api/runs"): RouteDoc(
        "Every run, newest first. `?state=` (repeatable) and `?limit=` filter.",
        response=list[models.RunSummary],
        query=models.RunListQuery,
        details="With sim counts per state. A list parameter takes repeats or commas: "
        "`?state=failed,partial`.",
    ),
    ("GET", "/api/runs/{run_id}"): RouteDoc(
        "One run with its trace and every sim (a `RunDetail`).",
        response=models.RunDetail,
        errors=(NO_RUN,),
        details="Besides the spec's fields a run has `started_at` (its first sim's start) and "
        "`finished_at` (its last sim's end, once every sim is finished), both `null` until then. A "
        "sim's start and end are its own times: a heartbeat may carry `at` (when the sim entered that "
        "state, which `cascade worker` stamps and keeps through retries), stored as the sim's "
        "`started_at`/`finished_at`, never later than now nor earlier than the sim; without it, when "
        "the server heard the heartbeat. So minutes the server was down are not the sim's time.",
    ),
    ("POST", "/api/runs/{run_id}/cancel"): RouteDoc(
        "Cancel every unfinished sim. Safe to repeat.",
        response=models.RunDetail,
        errors=(NO_RUN,),
        details="Answers the run after cancelling; the next heartbeat of a cancelled sim gets "
        "`cancel: true`.",
    ),
    ("DELETE", "/api/runs/{run_id}"): RouteDoc(
        "Delete a finished run and its outputs: `204`.",
        status=204,
        errors=(NO_RUN, (409, "The run is active: cancel it first.")),
        details="Its sims' logs, kernels, files and step timelines go too. Its open event streams "
        "end; an upload still arriving for its sims is a 404.",
    ),
    ("POST", "/api/runs/{run_id}/rerun"): RouteDoc(
        "A new run of the same trace and entries: `201` with it.",
        response=models.RunDetail,
        status=201,
        errors=(NO_RUN_OR_TRACE, TRACE_GONE, *RUN_CREATE_ERRORS[1:]),
        details="The old run stays as it is. The errors of `POST /api/runs` apply to the new run.",
    ),
    ("POST", "/api/runs/{run_id}/retry"): RouteDoc(
        "A new run with one sim per failed sim: `201` with it.",
        response=models.RunDetail,
        status=201,
        errors=(
            NO_RUN_OR_TRACE,
            (409, "No sim of the run failed (and, in a sharded run, no shard was cancelled)."),
            TRACE_GONE,
            *RUN_CREATE_ERRORS[1:],
        ),
        details="On the same configs and variants; cancelled sims are not retried. A sharded run is "
        "retried in place instead: each failed or cancelled shard again, in the same run (the new "
        "sim's `retry_of` names the one it replaces), and the answer is that run.",
    ),
    ("DELETE", "/api/traces/{trace_id}"): RouteDoc(
        "Delete a ready or failed trace no active run uses: `204`.",
        status=204,
        errors=(
            NO_TRACE,
            (
                409,
                "The trace is uploading or processing, an active run uses it, or it is already being "
                "deleted (a run asked for meanwhile is a 409 too).",
            ),
            (502, "The bucket refused the delete: the trace stays, usable."),
            (
                503,
                "At once while `/api/health` knows the S3 endpoint is failing (nothing changes), or when "
                "the endpoint has not answered within 15 s (the delete is journaled and finishes once it "
                "answers; the trace takes no new run meanwhile).",
            ),
        ),
        details="Its objects in the bucket go (so the id can be uploaded again), then its mirror. Its "
        "finished runs stay, and their `trace` becomes the record of the deleted trace (`failed`, "
        "`error` saying when it was deleted; no real timing): a trace uploaded later under the same id "
        "is another trace, never joined to them. The delete is journaled before anything is removed: "
        "one a crash interrupted is finished on the next start.",
    ),
    ("POST", "/api/sims/{sim_id}/heartbeat"): RouteDoc(
        "The simulator reports its sim's state; the answer says whether to stop (`cancel`).",
        response=models.HeartbeatAck,
        body=models.Heartbeat,
        errors=(NO_SIM,),
        simulator_only=True,
        details="Moves the sim to `state` when `SIM_TRANSITIONS` allows it; a `running` heartbeat "
        "brings a `lost` sim back, and one for a finished sim changes nothing. `error` is kept with "
        "any state (a warning on a success).",
    ),
    ("POST", "/api/sims/{sim_id}/logs"): RouteDoc(
        "The simulator appends a chunk of its output to the sim's log.",
        status=204,
        body=models.LogChunk,
        errors=(
            NO_SIM,
            (
                409,
                "The chunk's `seq` is 1,000 or more past the one the sim's log waits for: nothing is "
                "stored; send the chunks before it first (`detail` names the one it waits for). A chunk "
                "past a gap is held until the gap fills, and every held chunk is looked up with each "
                "chunk of the sim, so the server holds at most 999 (a sender that sends in order, as "
                "`cascade worker` does, never meets this).",
            ),
        ),
        simulator_only=True,
        details="The first chunk per `seq` wins; a repeat is ignored, so a retry is safe. A sim still "
        "`pending` takes its chunks too (its simulator may start before its launcher records it). A "
        "gap that has not filled by the sim's final heartbeat, or 30 s after it opened, is closed: the "
        "log goes on without the missing chunks, exactly as the simulator sent the rest, and the sim "
        "lists them in `missing_log_chunks` (`[first, last]` per run of them).",
    ),
    ("POST", "/api/sims/{sim_id}/step-timeline"): RouteDoc(
        "The simulator stores its sim's predicted step timeline and its comparison.",
        status=204,
        body=models.StepTimelineUpload,
        errors=(
            NO_SIM,
            (413, "The body passes `CASCADE_MAX_JSON_BYTES` (32 MiB by default)."),
            (
                422,
                "`simulated` lacks a `steps` list or a `summary` object, or `compare` is neither an "
                "object nor null.",
            ),
        ),
        details="Both objects are stored as they are, whatever else they hold: every reader (the "
        "step-timelines list, the Perfetto trace, the terminal UI, `/api/accuracy`) uses what it can "
        "of them (a step time is drawn when it is a number from 0 to a day) and leaves the rest.",
        simulator_only=True,
    ),
    ("PUT", "/api/sims/{sim_id}/files/{name}"): RouteDoc(
        "The simulator stores one of its output files.",
        response=models.SimFile,
        body="the file's raw bytes (`application/octet-stream`)",
        errors=(
            NO_SIM,
            (413, "The file passes the per-file limit, or the sim's files would pass theirs in all."),
            (415, "A form body: send the raw bytes."),
            BAD_FILE_NAME,
        ),
        simulator_only=True,
        details="A file of the same name is replaced; a reader never sees half a file.",
    ),
    ("GET", "/api/traces/{trace_id}/inputs"): RouteDoc(
        "A ready trace's simulator inputs with their sizes.",
        returns='a JSON object: `{"trace_id": ..., "files": [{"path": ..., "size": ...}]}`',
        query=NoQuery,
        errors=(
            NO_TRACE,
            (
                409,
                "The trace is not `ready`, is a sample, or a listed file is missing on the server.",
            ),
        ),
        simulator_only=True,
        agent_note="Lists a trace's instruction files.",
        details="`kernelslist.g` and the kernel traces its `kernel…` lines name, as Accel-Sim reads "
        "it, and a step timeline's files: what workers on hosts without the server's filesystem fetch.",
    ),
    ("GET", "/api/traces/{trace_id}/inputs/{path}"): RouteDoc(
        "One of a ready trace's simulator inputs.",
        returns="the file's bytes (`application/octet-stream`)",
        errors=(
            (404, "No trace has this id, or `/inputs` lists no such path."),
            (409, "The trace is not `ready`, is a sample, or the file is missing on the server."),
        ),
        simulator_only=True,
        agent_note="Serves one, and they are large.",
    ),
    ("GET", "/api/sims/{sim_id}/log"): RouteDoc(
        "The sim's full raw output, as plain text.",
        returns="the log as `text/plain`, a download named `<sim_id>.log`",
        errors=(NO_SIM,),
    ),
    ("GET", "/api/runs/{run_id}/kernels"): RouteDoc(
        "Every sim's per-kernel stats (`KernelStat`), without the full stats maps.",
        response=list[models.KernelStat],
        errors=(NO_RUN,),
    ),
    ("GET", "/api/runs/{run_id}/comparison"): RouteDoc(
        "Per-kernel real time against simulated time per config (a `Comparison`).",
        response=models.Comparison,
        errors=(NO_RUN,),
        details="Real times come from the trace's real_timing.json as the server stored it when the "
        "trace became ready. Row *i* pairs the *i*-th real kernel with the *i*-th kernel the sims "
        "finished; a row whose real kernel is another (by name, mangled or not) keeps `real_ns` and "
        "names the sims' kernel in `sim_kernel_name`: no accuracy figure pairs it.",
    ),
    ("GET", "/api/sims/{sim_id}/results"): RouteDoc(
        "One sim's config, per-kernel stats and totals (a `SimResults`).",
        response=models.SimResults,
        errors=(NO_SIM,),
        details="A download named `<sim_id>-results.json`.",
    ),
    ("GET", "/api/runs/{run_id}/results"): RouteDoc(
        "One JSON file with the run, trace, every sim's stats and the comparison (a `RunResults`, "
        "about 30 KB per kernel).",
        response=models.RunResults,
        errors=(NO_RUN,),
        details="A download named `<run_id>-results.json`, streamed a sim at a time.",
    ),
    ("GET", "/api/runs/{run_id}/perfetto"): RouteDoc(
        "The run's simulated kernels (and predicted steps) as a Chrome trace JSON for ui.perfetto.dev.",
        returns="a Chrome trace JSON object, a download named `<run_id>-perfetto.json`",
        errors=(NO_RUN,),
    ),
    ("GET", "/api/runs/{run_id}/step-timelines"): RouteDoc(
        "Each sim's predicted step timeline and its comparison with the real run (`SimStepTimeline`).",
        response=list[models.SimStepTimeline],
        errors=(NO_RUN,),
    ),
    ("GET", "/api/runs/{run_id}/files"): RouteDoc(
        "Every output file the run's sims uploaded (`RunFile`).",
        response=list[models.RunFile],
        errors=(NO_RUN,),
    ),
    ("GET", "/api/sims/{sim_id}/files"): RouteDoc(
        "The output files one sim uploaded (`SimFile`).",
        response=list[models.SimFile],
        errors=(NO_SIM,),
    ),
    ("GET", "/api/sims/{sim_id}/files/{name}"): RouteDoc(
        "One output file, as the sim uploaded it.",
        returns="the file's bytes with its `content_type`, a download named `name` (a `.gz` goes out "
        "as `application/gzip`, still compressed)",
        errors=((404, "No sim has this id, or the sim has no file of this name."), BAD_FILE_NAME),
    ),
    ("GET", "/api/runs/{run_id}/events"): RouteDoc(
        "Server-sent events for one run: a `snapshot`, then `sim`, `log` and `kernel` (see the event types).",
        returns="a `text/event-stream` of run events (`SnapshotEvent`, then `SimEvent`, `LogEvent`, "
        "`KernelEvent`), one JSON object per `data:` line",
        errors=(NO_RUN,),
        details="A `: keepalive` comment after `CASCADE_KEEPALIVE_S` without an event. A client that "
        "falls too far behind is disconnected and reconnects to a new snapshot; the stream ends when "
        "the run is deleted.",
    ),
    ("GET", "/api/gpu-configs/{name}/options"): RouteDoc(
        "The simulator options a config takes, with its values (`ConfigOption`): what a run entry's "
        "`options` may set.",
        response=list[models.ConfigOption],
        errors=((404, "No GPU config has this name."),),
    ),
    ("GET", "/api/accuracy"): RouteDoc(
        "Per trace with real timing and per variant: kernels compared, `mape_pct`, "
        "`mean_error_pct`, `pearson_r` (log-log), the `worst` kernels (`AccuracyRow`). "
        "`?trace=`, `?config=` filter.",
        response=list[models.AccuracyRow],
        query=models.AccuracyQuery,
        details="Over every finished real (not replayed) sim; `?points=true` adds every compared kernel. "
        "Only kernels real timing names as the sims do are compared (the others: `kernels_unmatched`), "
        "and a kernel's error counts at most ±1,000,000%.",
    ),
    ("GET", "/agent-prompt.md"): RouteDoc(
        "The agent prompt, with this server's URL (never its token).",
        returns="Markdown (`text/markdown`)",
        details="See [AI agents](../guides/agents.md).",
    ),
    ("GET", "/cascade-skill/SKILL.md"): RouteDoc(
        "The same prompt as a skill: name and description frontmatter, then the prompt.",
        returns="Markdown (`text/markdown`)",
    ),
}
