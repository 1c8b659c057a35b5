"""One wording for a run in the script commands and the UI (`run_rows`), one rule for what can be
done to a run (`shared.run_actions`), one reading of an API error's detail (`shared.error_detail`)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import httpx
import pytest

from cascade_core.error_detail import error_detail
from cascade_core.models import RunEntry, RunSummary
from cascade_core.run_actions import refusal
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.views.run_rows import entries_label, run_mark, run_time, sims_text
from cascade_tui.views.script_views import run_records

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


SHARDED = [RunEntry(gpu_config="SM7_QV100", count=1, shards=3)]


def summary(counts: dict[str, int], **kw) -> RunSummary:
    fields = dict(
        id="run-000000000001",
        trace_id="demo",
        created_at=T0,
        entries=[RunEntry(gpu_config="SM7_QV100", count=2), RunEntry(gpu_config="SM7_TITANV", count=1)],
        sim_counts=counts,
    )
    fields.update(kw)
    return RunSummary.model_validate(fields | {"state": kw.get("state", "active")})


@pytest.mark.parametrize(
    "kw, mark",
    [
        ({}, ""),
        ({"replay": True}, "stand-in"),
        ({"sample": True}, "sample"),
        ({"sample": True, "replay": True}, "sample"),
    ],
)
def test_the_list_and_the_command_mark_a_run_alike(kw, mark):
    run = summary({"succeeded": 3}, state="succeeded", **kw)
    assert run_mark(run) == mark
    assert run_records([run], T0)[0]["marks"] == mark
    cells = RunsScreen.row_cells(type("S", (), {"marked": set()})(), run, T0)
    assert cells[-1][0].startswith(f"{mark}: ") if mark else not cells[-1][0].startswith(("replay", "sample"))


@pytest.mark.parametrize("sample", [False, True])
def test_the_list_and_the_command_time_a_run_alike(sample):
    """The sample run's time is `-` in both (its recorded results took no time here)."""
    finished = T0.replace(minute=4, second=12)
    run = summary({"succeeded": 3}, state="succeeded", sample=sample, finished_at=finished)
    cells = RunsScreen.row_cells(type("S", (), {"marked": set()})(), run, finished)
    assert run_records([run], finished)[0]["time"] == run_time(run, finished) == ("-" if sample else "4m12s")
    assert run_time(run, finished) in [text for text, _ in cells]


def test_entries_and_sims_read_one_way():
    run = summary({"succeeded": 1, "failed": 1, "running": 1})
    assert entries_label(run.entries) == "SM7_QV100 × 2, SM7_TITANV × 1"
    sharded = [RunEntry(gpu_config="SM7_QV100", count=1, shards=3)]
    assert entries_label(sharded) == "SM7_QV100 × 1 in 3 shards"
    assert sims_text(run.sim_counts) == "1/3 succeeded, 1 running, 1 failed"


@pytest.mark.parametrize(
    "action, counts, state, kw, reason",
    [
        ("cancel", {"running": 1}, "active", {}, None),
        ("cancel", {"succeeded": 2}, "succeeded", {}, "has no unfinished sims: nothing to cancel"),
        ("rerun", {"succeeded": 2}, "succeeded", {}, None),
        (
            "rerun",
            {"succeeded": 2},
            "succeeded",
            {"sample": True},
            "is a sample run: its results are recorded",
        ),
        ("retry", {"failed": 1, "succeeded": 1}, "partial", {}, None),
        ("retry", {"succeeded": 2}, "succeeded", {}, "has no failed sims to retry"),
        ("retry", {"failed": 2}, "failed", {"sample": True}, "is a sample run"),
        ("retry", {"cancelled": 1, "succeeded": 1}, "partial", {}, "has no failed sims to retry"),
        # a sharded run retries its cancelled shards too (issue 32)
        ("retry", {"cancelled": 1, "succeeded": 2}, "partial", {"entries": SHARDED}, None),
        (
            "retry",
            {"succeeded": 3},
            "succeeded",
            {"entries": SHARDED},
            "has no failed sims or cancelled shards to retry",
        ),
        ("delete", {"failed": 2}, "failed", {}, None),
        ("delete", {"running": 1, "failed": 1}, "active", {}, "is active: cancel it first"),
    ],
)
def test_what_can_be_done_to_a_run(action, counts, state, kw, reason):
    said = refusal(action, summary(counts, state=state, **kw))
    assert (said is None) == (reason is None), said
    if reason:
        assert said is not None and said.startswith("run run-000000000001 ") and reason in said


@pytest.mark.parametrize(
    "status, content, headers, detail",
    [
        (409, b'{"detail": "run r is active"}', {"content-type": "application/json"}, "run r is active"),
        (422, b'{"detail": [{"loc": ["x"]}]}', {"content-type": "application/json"}, '[{"loc": ["x"]}]'),
        (
            422,
            b'{"detail": [{"loc": ["body", "entries", 0, "shards"], "msg": "Input should be less than or equal '
            b'to 64"}, {"loc": [], "msg": "bad"}]}',
            {"content-type": "application/json"},
            "entries.0.shards: Input should be less than or equal to 64; bad",
        ),
        (422, b'{"detail": [{"msg": "m" }, 3]}', {"content-type": "application/json"}, '[{"msg": "m"}, 3]'),
        (
            422,
            b'{"detail": [' + b'{"msg": "long"},' * 100 + b'{"msg": "x"}]}',
            {"content-type": "application/json"},
            "; ".join(["long"] * 100 + ["x"])[:300],
        ),
        (404, b'{"error": "x"}', {"content-type": "application/json"}, "Not Found"),
        (502, b"<html>bad gateway</html>", {}, "Bad Gateway"),
        (500, b"\xff\xfe", {}, "Internal Server Error"),
        (599, b"", {}, "HTTP 599"),
    ],
)
def test_an_error_detail_is_read_one_way(status, content, headers, detail):
    assert error_detail(httpx.Response(status, content=content, headers=headers)) == detail


def test_the_umbrella_command_is_client_side_and_loads_no_ui_for_the_worker():
    """`cascade worker --help` through the umbrella: no Textual, no server beyond the shared room."""
    code = (
        "import sys, contextlib, io\n"
        "from cascade_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit): main(['worker', '--help'])\n"
        "print(sorted(m for m in sys.modules if m == 'textual' or m == 'boto3' or m.startswith('cascade_tui.app')"
        " or (m.startswith('cascade_server.') and not m.startswith('cascade_core'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
