"""The scripting commands end to end: `cascade runs|run|results|traces` as real subprocesses
against the real server on a real port, whose local launcher runs real `cascade worker`
stand-ins. A stand-in fails for real when its recording ends before Accel-Sim's exit line."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from aiohttp import web

from cascade_tui.views.formatting import human_duration
from cascade_tui.views.stat_fields import stat_fields
from tests.conftest import TOKEN, free_port, ready_trace
from tests.helpers import Result, run_cascade

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"

pytestmark = pytest.mark.timeout(240)


async def cascade(
    *args: str,
    url: str | None,
    token: str | None = TOKEN,
    home: Path,
    extra_env: dict[str, str] | None = None,
) -> Result:
    """`cascade ARGS` in a subprocess (the server runs in this event loop, so wait without
    blocking it), with only the settings given here (no config file of the machine's)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        **(extra_env or {}),
    }
    if url:
        env["CASCADE_URL"] = url
    if token:
        env["CASCADE_TOKEN"] = token
    return await run_cascade(*args, env=env)


async def run_start(*args: str, url: str | None, home: Path, **kwargs) -> Result:
    """`cascade run start --trace tinyformer-step-sm70 ARGS`."""
    return await cascade(
        "run", "start", "--trace", "tinyformer-step-sm70", *args, url=url, home=home, **kwargs
    )


def samples_with_a_truncated_recording(root: Path) -> Path:
    """The repo's samples, except that SM7_TITANV's recording stops halfway: its stand-in exits 0
    without `GPGPU-Sim: *** exit detected ***`, which the worker reports as a failure."""
    shutil.copytree(SAMPLES / "accelsim", root / "accelsim")
    recordings = root / "recordings"
    shutil.copytree(SAMPLES / "recordings", recordings)
    lines = gzip.decompress((recordings / "SM7_TITANV.log.gz").read_bytes()).split(b"\n")
    (recordings / "SM7_TITANV.log.gz").write_bytes(gzip.compress(b"\n".join(lines[: len(lines) // 2])))
    return root


def csv_text(value: object) -> str:
    """A JSON value as the CSV writes it: None empty, a list its items joined with `;`."""
    if value is None:
        return ""
    return ";".join(map(str, value)) if isinstance(value, list) else str(value)


@pytest.fixture
async def live(make_server, tmp_path, monkeypatch):
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")  # workers inherit it
    samples = samples_with_a_truncated_recording(tmp_path / "samples")
    server = await make_server(launcher="local", local_slots=2, replay_speed=25.0, samples_dir=samples)
    await server.store.traces.put_trace(ready_trace())
    return server


async def test_run_start_wait_succeeds_and_results_round_trip_as_csv(live, tmp_path):
    url = live.url
    # Not a terminal (a pipe, as a file): plain progress lines, no bar sized for a width, never
    # cut, however narrow COLUMNS says the terminal is.
    started = await run_start(
        "--config", "SM7_QV100x2", "--wait", url=url, home=tmp_path, extra_env={"COLUMNS": "30"}
    )
    assert started.code == 0, started.err
    run_id = started.out.strip()
    assert run_id.startswith("run-") and started.out == run_id + "\n"  # stdout: just the id
    assert f"{run_id} succeeded: 2/2 succeeded" in started.err
    progress = [line for line in started.err.splitlines() if line.startswith(f"{run_id} ") and "%" in line]
    assert progress[-1] == f"{run_id} ✔ succeeded 100%  2/2 succeeded", started.err
    assert not any("[" in line or "…" in line for line in progress), progress
    async with live.client() as http:
        run = (await http.get(f"/api/runs/{run_id}")).json()
        kernels = (await http.get(f"/api/runs/{run_id}/kernels")).json()
        comparison = (await http.get(f"/api/runs/{run_id}/comparison")).json()
    assert run["state"] == "succeeded" and len(kernels) == 30

    # --kernels as CSV reads back to the API's numbers exactly, with names demangled.
    as_csv = await cascade("results", run_id, "--kernels", "--format", "csv", url=url, home=tmp_path)
    assert as_csv.code == 0, as_csv.err
    rows = list(csv.DictReader(io.StringIO(as_csv.out)))
    assert len(rows) == len(kernels)
    for row, stat in zip(rows, kernels):
        assert (row["sim_id"], int(row["kernel_index"]), row["kernel_name"]) == (
            stat["sim_id"],
            stat["kernel_index"],
            stat["kernel_name"],
        )
        assert float(row["sim_time_ns"]) == stat["sim_time_ns"]
        assert int(row["gpu_sim_cycle"]) == stat["gpu_sim_cycle"] and float(row["gpu_ipc"]) == stat["gpu_ipc"]
    assert rows[0]["kernel_name"].startswith("_Z") and not rows[0]["kernel"].startswith("_Z")
    assert (
        rows[0]["kernel"] == "embedding_kernel(int const*, float4 const*, float4 const*, float4*, int, int)"
    )

    # The same records as JSON and as CSV, for every view.
    for view in ([], ["--kernels"], ["--comparison"], ["--stats", "--key", "L2_*"]):
        as_json = await cascade("results", run_id, *view, "--format", "json", url=url, home=tmp_path)
        as_csv = await cascade("results", run_id, *view, "--format", "csv", url=url, home=tmp_path)
        records = json.loads(as_json.out)
        read_back = list(csv.DictReader(io.StringIO(as_csv.out)))
        assert [{k: csv_text(v) for k, v in r.items()} for r in records] == read_back, view
    comparison_rows = json.loads(
        (await cascade("results", run_id, "--comparison", "--format", "json", url=url, home=tmp_path)).out
    )
    assert [r["SM7_QV100"] for r in comparison_rows] == [r["sim_ns"]["SM7_QV100"] for r in comparison["rows"]]

    # --stats: every stats line, a row per kernel and key, repeats numbered as in /results;
    # --key keeps the keys matching a glob.
    async with live.client() as http:
        results = (await http.get(f"/api/runs/{run_id}/results")).json()
    stats = json.loads(
        (await cascade("results", run_id, "--stats", "--format", "json", url=url, home=tmp_path)).out
    )
    # ... each line of several numbers as one record per number (`stat_fields`, issue 32)
    assert len(stats) == sum(
        len(stat_fields(key, value))
        for sim in results["sims"]
        for k in sim["kernels"]
        for key, value in k["stats"].items()
    )
    not_a_number = {r["key"] for r in stats if isinstance(r["value"], str)} - {
        r["key"]
        for r in stats
        if r["value"] in ("NaN", "Infinity", "-Infinity")  # JSON's spelling
    }
    assert not_a_number == {"kernel_name"}
    blp = await cascade(
        "results",
        run_id,
        "--stats",
        "--key",
        "Bank_Level_Parallism*",
        "--format",
        "json",
        url=url,
        home=tmp_path,
    )
    first = results["sims"][0]["kernels"][0]
    expected = [(k, v) for k, v in first["stats"].items() if k.startswith("Bank_Level_Parallism")]
    assert [
        (r["key"], r["value"])
        for r in json.loads(blp.out)
        if (r["sim_id"], r["kernel_index"]) == (first["sim_id"], first["kernel_index"])
    ] == expected
    assert (
        len(expected) > 2 and ("Bank_Level_Parallism#2", first["stats"]["Bank_Level_Parallism#2"]) in expected
    )
    misuse = await cascade("results", run_id, "--key", "x*", url=url, home=tmp_path)
    assert (misuse.code, misuse.err) == (2, "cascade results: --key goes with --stats (--help for usage)\n")

    table = await cascade("results", run_id, url=url, home=tmp_path)
    assert table.code == 0
    assert table.out.splitlines()[0].split() == [
        "config",
        "ok",
        "of",
        "simulated",
        "lowest",
        "highest",
        "x",
        "fastest",
        "cycles",
        "IPC",
    ]
    assert table.out.splitlines()[1].split()[:3] == ["SM7_QV100", "2", "2"]
    assert "numbers from the stand-in simulator" in table.err  # said, but off stdout
    assert "configs cannot be compared from this run, so no config is named fastest" in table.err
    assert "Only one config" not in table.err


async def test_run_start_wait_exits_1_when_the_run_fails_or_is_partial(live, tmp_path):
    failed = await run_start("--config", "SM7_TITANV", "--wait", url=live.url, home=tmp_path)
    assert failed.code == 1, failed.err
    run_id = failed.out.strip()
    assert f"{run_id} failed: 0/1 succeeded, 1 failed" in failed.err
    assert "SM7_TITANV #0 sim-" in failed.err and "failed: " in failed.err  # the reason, per sim

    partial = await run_start(
        "--config", "SM7_QV100", "--config", "SM7_TITANV", "--wait", url=live.url, home=tmp_path
    )
    assert partial.code == 1
    assert "partial: 1/2 succeeded, 1 failed" in partial.err

    # retry makes a new run of the failed sim only; `run wait` follows it to the same end
    retried = await cascade("run", "retry", partial.out.strip(), url=live.url, home=tmp_path)
    assert retried.code == 0, retried.err
    waited = await cascade("run", "wait", retried.out.strip(), url=live.url, home=tmp_path)
    assert waited.code == 1 and "failed: 0/1 succeeded, 1 failed" in waited.err
    shown = await cascade("run", "show", retried.out.strip(), url=live.url, home=tmp_path)
    assert "configs  SM7_TITANV" in shown.out


async def test_lists_show_and_delete(live, tmp_path):
    url = live.url
    empty = await cascade("runs", url=url, home=tmp_path)
    assert (empty.code, empty.out, empty.err) == (0, "", "no runs\n")
    run_id = (await run_start("--config", "SM7_QV100", "--wait", url=url, home=tmp_path)).out.strip()
    listed = await cascade("runs", url=url, home=tmp_path)
    header, row = listed.out.splitlines()
    assert header.split() == ["run", "state", "trace", "sims", "configs", "time", "age", "note"]
    assert row.split()[:6] == [run_id, "✔", "succeeded", "tinyformer-step-sm70", "1/1", "succeeded"]
    async with live.client() as http:
        api_run = (await http.get(f"/api/runs/{run_id}")).json()
    finished = datetime.fromisoformat(api_run["finished_at"])
    took = human_duration((finished - datetime.fromisoformat(api_run["created_at"])).total_seconds())
    assert row.split()[7] == took  # how long the run took, not its age
    assert (
        json.loads((await cascade("runs", "--json", "--state", "succeeded", url=url, home=tmp_path)).out)[0][
            "id"
        ]
        == run_id
    )
    assert (
        await cascade("runs", "--state", "failed", url=url, home=tmp_path)
    ).err == "no runs in state failed\n"

    shown = await cascade("run", "show", run_id, url=url, home=tmp_path)
    lines = shown.out.splitlines()
    assert lines[0].startswith(f"run      {run_id}  ✔ succeeded")
    assert "note     numbers from the stand-in simulator" in shown.out
    assert f"time     took {took} (finished {finished:%Y-%m-%d %H:%M:%S} UTC)" in lines
    started = datetime.fromisoformat(api_run["started_at"])
    assert any(
        line.startswith(f"started  {started:%Y-%m-%d %H:%M:%S} UTC (the first sim, ") for line in lines
    )
    sims_header = lines.index("") + 1
    assert lines[sims_header].split()[:4] == ["config", "#", "state", "kernels"]
    assert lines[sims_header + 1].split()[:5] == ["SM7_QV100", "0", "✔", "succeeded", "15/15"]

    traces = await cascade("traces", "--state", "ready", url=url, home=tmp_path)
    assert traces.out.splitlines()[1].split()[0] == "tinyformer-step-sm70"

    deleted = await cascade("run", "delete", run_id, url=url, home=tmp_path)
    assert (deleted.code, deleted.err) == (0, f"deleted run {run_id}\n")
    again = await cascade("run", "delete", run_id, url=url, home=tmp_path)
    assert (again.code, again.err) == (3, f"cascade run delete: 404: run {run_id} not found\n")
    gone = await cascade("traces", "--delete", "tinyformer-step-sm70", url=url, home=tmp_path)
    assert (gone.code, gone.err) == (0, "deleted trace tinyformer-step-sm70\n")


async def test_errors_are_one_line_with_an_exit_code(live, tmp_path):
    url = live.url
    nobody = f"http://127.0.0.1:{free_port()}"
    cases = [
        (["runs"], {"url": nobody}, 3, f"cascade runs: No Cascade server answers at {nobody} (ConnectError)"),
        (
            ["traces"],
            {"token": "wrong"},
            3,
            "cascade traces: The server refused the token (401 Unauthorized)",
        ),
        (["runs"], {"token": None}, 3, "cascade runs: the server at http://127.0.0.1:"),
        (["run", "show", "run-000000000000"], {}, 3, "cascade run show: 404: run run-000000000000 not found"),
        (["results", "nope/../x"], {}, 3, "cascade results: 404: run nope/../x not found"),
        (
            ["run", "start", "--trace", "missing", "--config", "SM7_QV100"],
            {},
            3,
            "cascade run start: 404: trace missing not found",
        ),
        (
            ["run", "start", "--trace", "tinyformer-step-sm70", "--config", "SM75_RTX2060"],
            {},
            3,
            "cascade run start: 422: gpu_config 'SM75_RTX2060' is sm_75, but trace tinyformer-step-sm70 is sm_70",
        ),
        (
            ["run", "start", "--trace", "tinyformer-step-sm70", "--config", "SM7_QV100x99"],
            {},
            2,
            "cascade run start: --config 'SM7_QV100x99': the count must be 1 to 64",
        ),
        (
            ["run", "start", "--trace", "tinyformer-step-sm70"],
            {},
            2,
            "cascade run start: trace tinyformer-step-sm70 suggests no config: give --config NAME[xN] "
            "(sm_70: SM7_GV100, SM7_QV100, SM7_TITANV)",
        ),
        (
            ["runs"],
            {"url": "localhost:8000"},
            2,
            "cascade runs: CASCADE_URL / --url must start with http:// or https://: got 'localhost:8000'\n",
        ),
    ]
    for args, overrides, code, message in cases:
        result = await cascade(*args, **{"url": url, "home": tmp_path, **overrides})
        assert (result.code, result.out) == (code, ""), (args, result)
        assert result.err.startswith(message) and result.err.count("\n") == 1, (args, result.err)
    # No token sent: the server needs one, and the line says where it is (not that it was refused).
    tokenless = await cascade("runs", url=url, token=None, home=tmp_path)
    assert "refused" not in tokenless.err and "CASCADE_TOKEN" in tokenless.err
    assert tokenless.err.startswith(f"cascade runs: the server at {url} needs a token: ")
    assert str(tmp_path / ".local/share/cascade/token") in tokenless.err
    usage = await cascade("runs", "--state", "done", url=url, home=tmp_path)
    assert usage.code == 2 and "invalid choice: 'done'" in usage.err


async def test_settings_come_from_the_tui_config_file(live, tmp_path):
    config = tmp_path / "config" / "cascade" / "tui.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{live.url}"\ntoken = "{TOKEN}"\n')
    config.chmod(0o600)
    result = await cascade("runs", url=None, token=None, home=tmp_path)
    assert (result.code, result.err) == (0, "no runs\n"), result


async def test_bad_ids_urls_and_tokens_are_one_line_and_exit_2(live, tmp_path):
    url = live.url
    cases = [
        *(
            (["run", command, ""], {}, f"cascade run {command}: argument RUN_ID: must not be empty")
            for command in ("show", "wait", "cancel", "rerun", "retry", "delete")
        ),
        (["results", " "], {}, "cascade results: argument RUN_ID: must not be empty"),
        (["traces", "--delete", ""], {}, "cascade traces: argument --delete: must not be empty"),
        (
            ["runs"],
            {"url": "http://[::1"},
            "cascade runs: CASCADE_URL / --url: 'http://[::1' is not a valid URL",
        ),
        (["runs"], {"token": "é"}, "cascade runs: CASCADE_TOKEN / --token must be printable ASCII"),
        (["runs"], {"token": "a\nb"}, "cascade runs: CASCADE_TOKEN / --token must be printable ASCII"),
        (
            ["runs", "--state", "bogus"],
            {},
            "cascade runs: argument --state: invalid choice: 'bogus' (choose from ",
        ),
        (["run"], {}, "cascade run: the following arguments are required: COMMAND"),
        (
            ["run", "start", "--trace", "t", "--confg", "SM7_QV100"],
            {},
            "cascade run start: unrecognized arguments: --confg SM7_QV100 (--help for usage)",
        ),
        (["run", "show", "run-1", "--jsn"], {}, "cascade run show: unrecognized arguments: --jsn"),
    ]
    for args, overrides, message in cases:
        result = await cascade(*args, **{"url": url, "home": tmp_path, **overrides})
        assert (result.code, result.out) == (2, ""), (args, result)
        assert result.err.startswith(message) and result.err.count("\n") == 1, (args, result.err)
        assert "é" not in result.err  # the token is never echoed
    # The flag reaches the same check as the variable.
    flag = await cascade("runs", "--token", "é", url=url, token=None, home=tmp_path)
    assert flag.code == 2 and flag.err.startswith("cascade runs: CASCADE_TOKEN / --token must")
    assert (await cascade("traces", url=url, home=tmp_path)).code == 0  # a listing still works


async def test_deleting_an_active_run_suggests_the_cancel_command(live, tmp_path):
    url = live.url
    # 8 sims on 2 slots: the run is still active when the delete arrives
    run_id = (await run_start("--config", "SM7_QV100x8", url=url, home=tmp_path)).out.strip()
    refused = await cascade("run", "delete", run_id, url=url, home=tmp_path)
    assert (refused.code, refused.out) == (3, "")
    assert (
        refused.err
        == f"cascade run delete: 409: run {run_id} is active: cancel it first (cascade run cancel {run_id})\n"
    )
    assert (await cascade("run", "cancel", run_id, url=url, home=tmp_path)).code == 0
    waited = await cascade("run", "wait", run_id, url=url, home=tmp_path)
    assert waited.code == 1 and "100%" not in waited.err  # a cancelled run never reads complete
    assert (await cascade("run", "delete", run_id, url=url, home=tmp_path)).code == 0


async def test_control_characters_from_the_server_are_spelled_out_in_tables_but_exact_in_json(live, tmp_path):
    model, error = "opt\x1b[2J\x1b[H", "boom\x1b]0;pwned\x07\nfake line"
    await live.store.traces.put_trace(ready_trace("hostile-trace", model=model, state="failed", error=error))
    table = await cascade("traces", "--state", "failed", url=live.url, home=tmp_path)
    assert table.code == 0 and "\x1b" not in table.out and "\x07" not in table.out
    assert len(table.out.splitlines()) == 2  # the header and one row: the newline did not break it
    assert r"opt\x1b[2J\x1b[H" in table.out and r"boom\x1b]0;pwned\x07\nfake line" in table.out
    exact = json.loads(
        (await cascade("traces", "--json", "--state", "failed", url=live.url, home=tmp_path)).out
    )
    assert (exact[0]["model"], exact[0]["error"]) == (model, error)


async def test_configs_lists_the_gpu_configs_and_an_unknown_config_names_the_command(live, tmp_path):
    url = live.url
    async with live.client() as http:
        api = (await http.get("/api/gpu-configs")).json()
    table = await cascade("configs", url=url, home=tmp_path)
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert lines[0].split() == ["config", "arch", "clock", "source"]
    assert [line.split()[0] for line in lines[1:]] == [c["name"] for c in api]
    sm70 = await cascade("configs", "--arch", "sm_70", url=url, home=tmp_path)
    assert [line.split()[:2] for line in sm70.out.splitlines()[1:]] == [
        [c["name"], "sm_70"] for c in api if c["arch"] == "sm_70"
    ]
    assert json.loads((await cascade("configs", "--json", url=url, home=tmp_path)).out) == api
    none = await cascade("configs", "--arch", "sm_1", url=url, home=tmp_path)
    assert (none.code, none.out) == (0, "") and none.err.startswith("no configs of arch sm_1 (archs: ")

    unknown = await run_start("--config", "NOPE", url=url, home=tmp_path)
    assert (unknown.code, unknown.out) == (3, "")
    assert unknown.err == (
        "cascade run start: 422: unknown gpu_config 'NOPE' (sm_70: SM7_GV100, SM7_QV100, "
        "SM7_TITANV; `cascade configs` lists every config)\n"
    )


async def test_the_suggested_config_is_named_only_once_the_server_took_the_run(live, tmp_path):
    await live.store.traces.put_trace(ready_trace("suggests-qv100", suggested_sim_config="SM7_QV100"))
    await live.store.traces.put_trace(ready_trace("a-sample", suggested_sim_config="SM7_QV100", sample=True))
    refused = await cascade("run", "start", "--trace", "a-sample", url=live.url, home=tmp_path)
    assert (refused.code, refused.out) == (3, "")
    assert refused.err == (
        "cascade run start: 409: trace a-sample is a sample, which has no instruction traces to simulate\n"
    )  # no `config:` line for a run that was never made
    taken = await cascade("run", "start", "--trace", "suggests-qv100", url=live.url, home=tmp_path)
    assert taken.code == 0 and taken.out.startswith("run-")
    assert taken.err == "config: SM7_QV100 (the trace's suggested config; --config to choose)\n"
    assert (await cascade("run", "cancel", taken.out.strip(), url=live.url, home=tmp_path)).code == 0


@pytest.fixture
async def not_cascade():
    """Another program's web server on a port: it answers every path with a 404 page."""
    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_a_server_that_is_not_cascade_is_named_as_such(not_cascade, tmp_path):
    for args in (["runs"], ["results", "run-1"], ["run", "show", "run-1"], ["configs"]):
        result = await cascade(*args, url=not_cascade, home=tmp_path)
        assert (result.code, result.out) == (3, ""), (args, result)
        assert result.err == (
            f"cascade {' '.join(args[:2] if args[0] == 'run' else args[:1])}: {not_cascade} answers "
            "but is not a Cascade server (GET /api/health: 404): is `cascade up` on another "
            "port? Its start line names it; pass it with --url or CASCADE_URL\n"
        ), args


async def test_commands_find_the_server_cascade_up_started_on_another_port(live, not_cascade, tmp_path):
    """`cascade up` records the URL it started a server at (8001 when 8000 was taken) in the data
    directory, next to the token: a command with no URL and no token given finds both there."""
    data = tmp_path / ".local" / "share" / "cascade"
    data.mkdir(parents=True)
    (data / "url").write_text(live.url + "\n")
    (data / "token").write_text(TOKEN + "\n")
    found = await cascade("runs", url=None, token=None, home=tmp_path)
    assert (found.code, found.err) == (0, "no runs\n"), found
    # A URL given explicitly wins (a program there that is no Cascade server gets no token).
    given = await cascade("runs", url=not_cascade, token=None, home=tmp_path)
    assert given.code == 3 and "is not a Cascade server" in given.err
    # A record left by a server that is gone is passed over for the default URL.
    gone = f"http://127.0.0.1:{free_port()}"
    (data / "url").write_text(gone + "\n")
    stale = await cascade("runs", url=None, token=None, home=tmp_path)
    assert gone not in stale.err, stale  # whatever answers at the default URL (8000), not the record


async def test_traces_state_takes_a_comma_list_like_the_api(live, tmp_path):
    await live.store.traces.put_trace(ready_trace("broken-trace", state="failed", error="bad header"))
    both = json.loads(
        (await cascade("traces", "--json", "--state", "ready,failed", url=live.url, home=tmp_path)).out
    )
    assert {t["state"] for t in both} == {"ready", "failed"} and "broken-trace" in {t["id"] for t in both}
    only_failed = json.loads(
        (await cascade("traces", "--json", "--state", "failed", url=live.url, home=tmp_path)).out
    )
    assert [t["id"] for t in only_failed] == ["broken-trace"]


async def test_runs_help_offers_run_states_not_trace_states(live, tmp_path):
    usage = await cascade("runs", "--help", url=live.url, home=tmp_path)
    assert usage.code == 0
    text = " ".join(usage.out.split())
    assert "(active, succeeded, partial, failed, cancelled)" in text and "(failed,cancelled)" in text
    assert "ready" not in text
    traces = " ".join((await cascade("traces", "--help", url=live.url, home=tmp_path)).out.split())
    assert "(ready,failed)" in traces and "(active," not in traces


async def test_a_token_too_long_for_the_server_is_named_as_such(live, tmp_path):
    """The server's HTTP layer refuses a 10,000-character Authorization header (400, plain text)
    before any route: that is a Cascade server refusing the request, not another program."""
    token = "x" * 10_000
    result = await cascade("runs", url=live.url, token=token, home=tmp_path)
    assert (result.code, result.out) == (3, ""), result
    assert result.err == (
        "cascade runs: 400: malformed HTTP request: the request line or a header is too long "
        "(the token sent is 10,000 characters long; check CASCADE_TOKEN / --token: it must be "
        "the `token:` line `cascade serve` printed)\n"
    ), result.err
    assert "not a Cascade server" not in result.err and "xxxx" not in result.err
