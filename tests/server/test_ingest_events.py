"""Issue 3: log ingest and parsing through the API, result routes, files, step timing, events."""

from __future__ import annotations

import asyncio
import gzip
import json
import random

import httpx
import pytest

from cascade_server.appkeys import BROKER_KEY
from cascade_server.ingest.chunk_order import MAX_AHEAD
from cascade_server.storage.codecs import unpack_state
from tests.conftest import ready_trace
from tests.helpers import RECORDED_RESULTS, create_run, recorded_log, recording, store_real_timing, wait_until

QV100_CYCLES = RECORDED_RESULTS["SM7_QV100"]["cycles"]
TITANV_CYCLES = RECORDED_RESULTS["SM7_TITANV"]["cycles"]


def chunks(lines: list[str], size: int) -> list[list[str]]:
    return [lines[i : i + size] for i in range(0, len(lines), size)]


async def post_log(http: httpx.AsyncClient, sim_id: str, parts: list[list[str]], order=None) -> None:
    for seq in order if order is not None else range(len(parts)):
        resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": parts[seq]})
        assert resp.status_code == 204, resp.text


async def half_a_sim(server, size: int = 700) -> tuple[str, list[list[str]], int, bytes]:
    """A QV100 sim with the first half of its real log posted in chunks of `size` lines: its id,
    the chunks, how many were posted, and its saved parser state (which stands in a block)."""
    parts = chunks(recorded_log("SM7_QV100"), size)
    half = len(parts) // 2
    async with server.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await post_log(http, sim_id, parts[:half])
    async with server.store.db.w.execute("SELECT parser_state FROM sims WHERE id=?", (sim_id,)) as cur:
        saved = (await cur.fetchone())[0]
    state = unpack_state(saved)
    assert state is not None and state["block"], "the saved state stands inside a stats block"
    return sim_id, parts, half, saved


@pytest.fixture
async def ingest(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    return server


async def test_log_chunks_out_of_order_and_repeated_parse_like_one_stream(ingest):
    lines = recorded_log("SM7_QV100")
    parts = chunks(lines, 997)
    order = list(range(len(parts)))
    random.Random(7).shuffle(order)
    order += order[:5]  # retries after timeouts: ignored
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await post_log(http, sim_id, parts, order)
        # a repeat with other content is ignored too: the first chunk per seq wins
        await post_log(http, sim_id, [["something else"]], [0])
        log = await http.get(f"/api/sims/{sim_id}/log")
        assert log.status_code == 200
        assert log.headers["Content-Type"].startswith("text/plain")
        assert log.headers["Content-Disposition"] == f'attachment; filename="{sim_id}.log"'
        assert log.content == recording("SM7_QV100")
        sim = (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]
        assert sim["kernels_done"] == 15
        assert sim["current_kernel"] == "_Z16layernorm_kernelILi128EEvPK6float4S2_S2_PS0_if"
        assert sim["latest"]["gpu_tot_sim_cycle"] == 169588 and sim["latest"]["gpu_tot_sim_insn"] == 19169792
        assert sim["latest"]["sim_rate_ips"] > 0
        assert sim["log_tail"] == lines[-20:]
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert [k["gpu_sim_cycle"] for k in kernels] == QV100_CYCLES
        assert [k["kernel_launch_uid"] for k in kernels] == list(range(1, 16))
        assert all(k["stats"] == {} for k in kernels)
        assert kernels[0]["sim_time_ns"] == pytest.approx(6146 / 1132.0 * 1000)


async def test_log_errors(ingest):
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        for body, loc in (
            ({"seq": -1, "lines": []}, ["body", "seq"]),
            ({"seq": 0, "lines": ["ok", 3]}, ["body", "lines", 1]),
            ({"seq": 0, "lines": "not a list"}, ["body", "lines"]),
        ):
            resp = await http.post(f"/api/sims/{sim_id}/logs", json=body)
            assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == loc
        missing = await http.post("/api/sims/sim-000000000000/logs", json={"seq": 0, "lines": []})
        assert missing.status_code == 404 and missing.json() == {"detail": "sim sim-000000000000 not found"}
        assert (await http.get("/api/sims/sim-000000000000/log")).status_code == 404
        # an empty chunk is a chunk: it takes its seq and adds no line
        assert (await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": []})).status_code == 204
        await post_log(http, sim_id, [[], ["one", "", "three"]], [1])
        assert (await http.get(f"/api/sims/{sim_id}/log")).content == b"one\n\nthree\n"


async def test_downloaded_log_is_exact_across_a_restart(ingest):
    parts = chunks(recorded_log("SM7_TITANV"), 1000)
    half = len(parts) // 2
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_TITANV", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await post_log(http, sim_id, parts, list(range(half)) + [half + 1])  # half + 1 waits for half
    await ingest.restart()
    async with ingest.client() as http:
        await post_log(http, sim_id, parts, list(range(half - 2, len(parts))))
        assert (await http.get(f"/api/sims/{sim_id}/log")).content == recording("SM7_TITANV")
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert [k["gpu_sim_cycle"] for k in kernels] == TITANV_CYCLES


async def finished_run(http, store_dir=None) -> dict:
    """A run of QV100 x2 and TITANV x1 with real logs; one QV100 replica stopped after 5 kernels."""
    run = await create_run(
        http, [{"gpu_config": "SM7_TITANV", "count": 1}, {"gpu_config": "SM7_QV100", "count": 2}]
    )
    sims = {(s["gpu_config"], s["replica"]): s["id"] for s in run["sims"]}
    await post_log(http, sims["SM7_QV100", 0], chunks(recorded_log("SM7_QV100"), 2000))
    qv = recorded_log("SM7_QV100")
    cut = [i for i, line in enumerate(qv) if line.startswith("gpgpu_silicon_slowdown")][4] + 1
    await post_log(http, sims["SM7_QV100", 1], chunks(qv[:cut], 2000))
    await post_log(http, sims["SM7_TITANV", 0], chunks(recorded_log("SM7_TITANV"), 2000))
    return {"run": run, "sims": sims}


async def test_comparison_medians_and_real_timing(ingest):
    async with ingest.client() as http:
        made = await finished_run(http)
        run_id = made["run"]["id"]
        comp = (await http.get(f"/api/runs/{run_id}/comparison")).json()
        assert comp["has_real_timing"] is False and comp["configs"] == ["SM7_TITANV", "SM7_QV100"]
        assert len(comp["rows"]) == 15
        row0 = comp["rows"][0]
        assert row0["kernel_index"] == 0 and row0["real_ns"] is None
        assert row0["kernel_name"] == "_Z16embedding_kernelPKiPK6float4S3_PS1_ii"
        # kernel 0 finished on both QV100 replicas (same cycles): the median is that time
        assert row0["sim_ns"]["SM7_QV100"] == pytest.approx(6146 / 1132.0 * 1000)
        assert row0["sim_ns"]["SM7_TITANV"] == pytest.approx(1230 / 1200.0 * 1000)
        assert comp["rows"][10]["sim_ns"]["SM7_QV100"] == pytest.approx(19658 / 1132.0 * 1000)

        names = [row["kernel_name"] for row in comp["rows"]]
        trace = await ingest.store.traces.get_trace("tinyformer-step-sm70")
        for kernel, name in zip(trace.kernels, names):
            kernel.name = name
        real = [  # in any order (sorted by kernel id); the 7th names another kernel
            {
                "kernel_id": 16 - i,
                "kernel_name": "_Z7unknownv" if i == 9 else names[15 - i],
                "duration_ns": 1000.0 * (16 - i),
            }
            for i in range(1, 16)
        ]
        await store_real_timing(ingest.store, trace, real)
        comp = (await http.get(f"/api/runs/{run_id}/comparison")).json()
        assert comp["has_real_timing"] is True
        assert [r["real_ns"] for r in comp["rows"]] == [1000.0 * (i + 1) for i in range(15)]
        assert comp["rows"][0]["kernel_name"] == names[0] and "sim_kernel_name" not in comp["rows"][0]
        # Real timing names another kernel at position 6: kept, and the sims' kernel is named.
        assert comp["rows"][6]["kernel_name"] == "_Z7unknownv"
        assert comp["rows"][6]["sim_kernel_name"] == names[6]
        assert [i for i, r in enumerate(comp["rows"]) if "sim_kernel_name" in r] == [6]
        assert (await http.get("/api/runs/run-000000000000/comparison")).status_code == 404


async def test_results_downloads_and_perfetto(ingest):
    async with ingest.client() as http:
        made = await finished_run(http)
        run_id, sim_id = made["run"]["id"], made["sims"]["SM7_QV100", 0]
        one = await http.get(f"/api/sims/{sim_id}/results")
        assert one.headers["Content-Disposition"] == f'attachment; filename="{sim_id}-results.json"'
        body = one.json()
        assert body["sim"]["id"] == sim_id and body["trace_id"] == "tinyformer-step-sm70"
        assert body["gpu_config"] == {
            "name": "SM7_QV100",
            "arch": "sm_70",
            "core_clock_mhz": 1132.0,
            "added": False,
            "power_model": False,
        }
        assert len(body["kernels"]) == 15 and len(body["kernels"][0]["stats"]) > 400
        assert body["kernels"][0]["stats"]["gpu_sim_cycle"] == 6146
        assert body["kernels"][0]["stats"]["gpu_occupancy"] == "NaN"  # -nan% in the log
        assert body["totals"] == body["sim"]["latest"]

        bundle = await http.get(f"/api/runs/{run_id}/results")
        assert bundle.headers["Content-Disposition"] == f'attachment; filename="{run_id}-results.json"'
        data = bundle.json()
        assert set(data) == {"run", "trace", "sims", "comparison"}
        assert data["run"]["id"] == run_id and "sims" not in data["run"]
        assert len(data["trace"]["kernels"]) == 15
        assert [len(s["kernels"]) for s in data["sims"]] == [15, 5, 15]
        assert data["comparison"] == (await http.get(f"/api/runs/{run_id}/comparison")).json()

        perfetto = await http.get(f"/api/runs/{run_id}/perfetto")
        assert perfetto.headers["Content-Disposition"] == f'attachment; filename="{run_id}-perfetto.json"'
        trace = perfetto.json()
        assert set(trace) == {"traceEvents", "displayTimeUnit", "otherData"}
        names = {(e["pid"], e["args"]["name"]) for e in trace["traceEvents"] if e["name"] == "process_name"}
        assert names == {(1, "SM7_TITANV"), (2, "SM7_QV100")}
        threads = [e for e in trace["traceEvents"] if e["name"] == "thread_name"]
        assert len(threads) == 3
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 2 and e["tid"] == 1]
        assert len(slices) == 15
        for before, after in zip(slices, slices[1:]):  # laid end to end
            assert after["ts"] == pytest.approx(before["ts"] + before["dur"])
        assert slices[0]["dur"] == pytest.approx(6146 / 1132.0)
        assert slices[0]["name"].startswith("embedding_kernel(")  # demangled
        for path in ("results", "perfetto", "kernels", "files", "step-timelines"):
            assert (await http.get(f"/api/runs/run-000000000000/{path}")).status_code == 404
        assert (await http.get("/api/sims/sim-000000000000/results")).status_code == 404


STEPS = {"meta": {"run_name": "x"}, "steps": [], "requests": [], "summary": {"per_kind": {}}}


async def test_step_timelines(ingest):
    async with ingest.client() as http:
        run = await create_run(http)
        first, second = (s["id"] for s in run["sims"])
        assert (await http.get(f"/api/runs/{run['id']}/step-timelines")).json() == []
        for body in (
            {"simulated": {"steps": []}},
            {"simulated": {"summary": {}}},
            {"simulated": {"steps": {}, "summary": {}}},
            {"simulated": STEPS, "compare": [1]},
        ):
            resp = await http.post(f"/api/sims/{first}/step-timeline", json=body)
            assert resp.status_code == 422, body
        missing = await http.post("/api/sims/sim-000000000000/step-timeline", json={"simulated": STEPS})
        assert missing.status_code == 404
        assert (
            await http.post(
                f"/api/sims/{second}/step-timeline", json={"simulated": STEPS, "compare": {"a": 1}}
            )
        ).status_code == 204
        assert (
            await http.post(f"/api/sims/{first}/step-timeline", json={"simulated": {**STEPS, "v": 1}})
        ).status_code == 204
        assert (
            await http.post(f"/api/sims/{first}/step-timeline", json={"simulated": {**STEPS, "v": 2}})
        ).status_code == 204
        got = (await http.get(f"/api/runs/{run['id']}/step-timelines")).json()
        by_replica = {g["replica"]: g for g in got}
        assert [g["replica"] for g in got] == [0, 1]
        assert by_replica[0]["simulated"]["v"] == 2 and by_replica[0]["compare"] is None
        assert by_replica[1]["compare"] == {"a": 1} and by_replica[1]["gpu_config"] == "SM7_QV100"


async def test_files_round_trip_types_and_names(ingest):
    async with ingest.client() as http:
        run = await create_run(http)
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}/files"
        payloads = {
            "kernel-stats.csv": b"a,b\n1,2\n",
            "notes.txt": b"hi",
            "accelsim.log.gz": gzip.compress(b"log\n"),
            "r.json": b"{}",
            "blob.bin": bytes(range(256)),
            "run.log": b"x\n",
        }
        for name, data in payloads.items():
            resp = await http.put(
                f"{url}/{name}", content=data, headers={"Content-Type": "application/octet-stream"}
            )
            assert resp.status_code == 200, resp.text
            assert resp.json()["name"] == name and resp.json()["size"] == len(data)
        listed = (await http.get(url)).json()
        assert [f["name"] for f in listed] == sorted(payloads)
        types = {f["name"]: f["content_type"] for f in listed}
        assert types == {
            "accelsim.log.gz": "application/gzip",
            "blob.bin": "application/octet-stream",
            "kernel-stats.csv": "text/csv",
            "notes.txt": "text/plain",
            "r.json": "application/json",
            "run.log": "text/plain",
        }
        gz = await http.get(f"{url}/accelsim.log.gz", headers={"Accept-Encoding": "gzip"})
        assert gz.headers["Content-Type"] == "application/gzip" and "Content-Encoding" not in gz.headers
        assert gz.content == payloads["accelsim.log.gz"]
        assert gz.headers["Content-Disposition"] == 'attachment; filename="accelsim.log.gz"'
        # a re-put replaces the file
        await http.put(f"{url}/notes.txt", content=b"second version")
        assert (await http.get(f"{url}/notes.txt")).content == b"second version"
        run_files = (await http.get(f"/api/runs/{run['id']}/files")).json()
        assert {(f["sim_id"], f["gpu_config"], f["replica"]) for f in run_files} == {(sim_id, "SM7_QV100", 0)}
        assert len(run_files) == 6
        for bad in ("my file.txt", "a" * 129, "semi;colon", "%2E%2E"):
            resp = await http.put(f"{url}/{bad}", content=b"x")
            assert resp.status_code in (422, 404), bad
            if resp.status_code == 422:
                assert "must match" in resp.json()["detail"]
        assert (await http.put(f"{url}/{'a' * 128}", content=b"x")).status_code == 200
        assert (await http.get(f"{url}/missing.txt")).status_code == 404
        assert (await http.put("/api/sims/sim-000000000000/files/a.txt", content=b"x")).status_code == 404
        form = await http.put(f"{url}/f.txt", data={"a": "b"})
        assert form.status_code == 415


async def test_file_size_limits_at_the_boundaries(ingest):
    mib = 1024 * 1024
    async with ingest.client() as http:
        run = await create_run(http)
        url = f"/api/sims/{run['sims'][0]['id']}/files"
        exact = await http.put(f"{url}/big.bin", content=b"\0" * (64 * mib))
        assert exact.status_code == 200 and exact.json()["size"] == 64 * mib
        over = await http.put(f"{url}/big2.bin", content=b"\0" * (64 * mib + 1))
        assert over.status_code == 413 and over.json()["detail"] == "file is over the 64 MiB per-file limit"

        async def stream(total: int):  # no Content-Length: the limit is enforced while streaming
            sent = 0
            while sent < total:
                block = min(mib, total - sent)
                sent += block
                yield b"\1" * block

        streamed = await http.put(f"{url}/streamed.bin", content=stream(64 * mib + 1))
        assert streamed.status_code == 413
        assert not list((ingest.settings.files_dir / run["sims"][0]["id"]).glob("*.part"))
        assert [f["name"] for f in (await http.get(url)).json()] == ["big.bin"]


async def test_per_sim_total_limit_ignores_the_replaced_file(make_server, accelsim_dir):  # noqa: F811
    server = await make_server(accelsim_dir=accelsim_dir, max_file_bytes=400, max_sim_files_bytes=1000)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http)
        url = f"/api/sims/{run['sims'][0]['id']}/files"
        assert (await http.put(f"{url}/a", content=b"a" * 400)).status_code == 200
        assert (await http.put(f"{url}/b", content=b"b" * 400)).status_code == 200
        assert (await http.put(f"{url}/c", content=b"c" * 200)).status_code == 200  # exactly 1000
        over = await http.put(f"{url}/d", content=b"d")
        assert over.status_code == 413 and "would pass" in over.json()["detail"]
        assert (await http.put(f"{url}/a", content=b"A" * 400)).status_code == 200  # replacing: same total
        assert (await http.put(f"{url}/a", content=b"A" * 401)).status_code == 413  # over the per-file limit
        other = run["sims"][1]["id"]
        assert (await http.put(f"/api/sims/{other}/files/a", content=b"a" * 400)).status_code == 200


# --- events ---------------------------------------------------------------------------------------


class EventReader:
    """Reads the raw SSE wire format, checking each frame is exactly `data: <json>` + blank line."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()
        self.comments: list[str] = []

    async def next(self) -> dict:
        while True:
            line = await anext(self.lines)
            if line.startswith(":"):
                self.comments.append(line)
                assert await anext(self.lines) == ""
                continue
            assert line.startswith("data: "), line
            assert await anext(self.lines) == ""
            return json.loads(line[6:])


async def test_event_stream_order_and_headers(ingest):
    lines = recorded_log("SM7_QV100")
    first_block_end = next(i for i, line in enumerate(lines) if line.startswith("gpgpu_silicon_slowdown")) + 1
    async with ingest.client(timeout=httpx.Timeout(30)) as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await wait_until(lambda: _launching(http, run["id"]))
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            assert resp.status_code == 200
            assert resp.headers["Content-Type"] == "text/event-stream"
            assert resp.headers["Cache-Control"] == "no-cache" and resp.headers["X-Accel-Buffering"] == "no"
            events = EventReader(resp)
            snapshot = await events.next()
            assert snapshot["type"] == "snapshot" and snapshot["kernels"] == []
            assert snapshot["run"]["id"] == run["id"] and snapshot["run"]["sims"][0]["state"] == "launching"
            await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
            sim_event = await events.next()
            assert sim_event["type"] == "sim" and sim_event["sim"]["state"] == "running"
            # one chunk that completes the first kernel: log, kernel, sim
            await post_log(http, sim_id, [lines[:first_block_end]])
            log_event, kernel_event, progress = await events.next(), await events.next(), await events.next()
            assert log_event == {"type": "log", "sim_id": sim_id, "lines": lines[:first_block_end]}
            assert kernel_event["type"] == "kernel" and kernel_event["stat"]["gpu_sim_cycle"] == 6146
            assert len(kernel_event["stat"]["stats"]) > 400  # live kernel events carry the full map
            assert progress["type"] == "sim" and progress["sim"]["kernels_done"] == 1
            await http.post(f"/api/runs/{run['id']}/cancel")
            cancelled = await events.next()
            assert cancelled["type"] == "sim" and cancelled["sim"]["state"] == "cancelled"
        # a reconnect's snapshot has the kernel, with its stats emptied
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            snapshot = await EventReader(resp).next()
            assert snapshot["run"]["state"] == "cancelled"
            assert [(k["kernel_index"], k["stats"]) for k in snapshot["kernels"]] == [(0, {})]
        missing = await http.get("/api/runs/run-000000000000/events")
        assert missing.status_code == 404 and missing.json() == {"detail": "run run-000000000000 not found"}


async def _launching(http, run_id):
    return (await http.get(f"/api/runs/{run_id}")).json()["sim_counts"] == {"launching": 1}


@pytest.fixture
async def quick_keepalives(make_server, accelsim_dir):
    """A server that sends an idle event stream a keepalive every 0.2 s, holding the ready trace."""
    server = await make_server(accelsim_dir=accelsim_dir, keepalive_s=0.2)
    await server.store.traces.put_trace(ready_trace())
    return server


async def cancelled_run(http: httpx.AsyncClient) -> dict:
    run = await create_run(http, [("SM7_QV100", 1)])
    await http.post(f"/api/runs/{run['id']}/cancel")
    return run


async def test_keepalive_and_stream_stays_open_after_the_run_ends(quick_keepalives):
    async with quick_keepalives.client() as http:
        run = await cancelled_run(http)
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            lines = resp.aiter_lines()
            assert (await anext(lines)).startswith("data: ")
            assert await anext(lines) == ""
            for _ in range(3):  # the run is over; the stream stays open with keepalives
                assert await anext(lines) == ": keepalive"
                assert await anext(lines) == ""


async def test_the_stream_of_a_deleted_run_ends(quick_keepalives):
    """Deleting a run ends its open event streams (they would otherwise send keepalives
    forever); a reconnect is a 404."""
    server = quick_keepalives
    async with server.client() as http:
        run = await cancelled_run(http)
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            events = EventReader(resp)
            assert (await events.next())["type"] == "snapshot"
            assert (await http.delete(f"/api/runs/{run['id']}")).status_code == 204
            with pytest.raises(StopAsyncIteration):  # the server closed the stream
                await events.next()
        assert server.app[BROKER_KEY].subscriber_count(run["id"]) == 0
        resp = await http.get(f"/api/runs/{run['id']}/events")
        assert (resp.status_code, resp.json()) == (404, {"detail": f"run {run['id']} not found"})


async def test_departed_clients_are_cleaned_up_at_once(ingest):
    from cascade_server.appkeys import BROKER_KEY

    broker = ingest.app[BROKER_KEY]
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            await anext(resp.aiter_lines())
            assert broker.subscriber_count(run["id"]) == 1

        async def gone():
            return broker.subscriber_count(run["id"]) == 0

        await wait_until(gone, timeout=5)


@pytest.mark.slow
async def test_a_subscriber_2000_events_behind_is_disconnected(ingest):
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            events = EventReader(resp)
            assert (await events.next())["type"] == "snapshot"
            # MAX_AHEAD - 1 chunks (as many as may wait) wait for seq 0, which completes a kernel;
            # its arrival parses all of them in one commit and publishes 2,001 events at once
            # (a log and a sim event per chunk, and the kernel): more than the subscriber may hold.
            for seq in range(1, MAX_AHEAD):
                await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": [f"line {seq}"]})
            lines = recorded_log("SM7_QV100")
            first_kernel = lines[
                : next(i for i, line in enumerate(lines) if line.startswith("gpgpu_silicon_slowdown")) + 1
            ]
            await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": first_kernel})
            received = 0
            with pytest.raises((StopAsyncIteration, httpx.RemoteProtocolError, httpx.ReadError)):
                while True:
                    await events.next()
                    received += 1
            assert received < 2000
        # a fresh connection starts again from a snapshot holding everything
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
            snapshot = await EventReader(resp).next()
            assert snapshot["run"]["sims"][0]["log_tail"][-1] == f"line {MAX_AHEAD - 1}"


@pytest.mark.slow
async def test_snapshot_never_overlaps_the_events_after_it(ingest):
    """Writers post kernels while clients connect at random moments: for every client the
    snapshot's kernels and the kernel events after it are disjoint and add up to everything."""
    parts = chunks(recorded_log("SM7_TITANV"), 300)
    async with ingest.client(timeout=60) as http:
        run = await create_run(http, [{"gpu_config": "SM7_TITANV", "count": 3}])
        sim_ids = [s["id"] for s in run["sims"]]
        done = asyncio.Event()
        seen: list[tuple[set, list]] = []

        async def watch(delay: float):
            await asyncio.sleep(delay)
            async with http.stream("GET", f"/api/runs/{run['id']}/events") as resp:
                events = EventReader(resp)
                snapshot = await events.next()
                before = {(k["sim_id"], k["kernel_index"]) for k in snapshot["kernels"]}
                after: list[tuple[str, int]] = []
                while len(before) + len(after) < 45:
                    event = await events.next()
                    if event["type"] == "kernel":
                        after.append((event["stat"]["sim_id"], event["stat"]["kernel_index"]))
                seen.append((before, after))

        watchers = [asyncio.create_task(watch(i * 0.05)) for i in range(8)]
        await asyncio.gather(*(post_log(http, sim_id, parts) for sim_id in sim_ids))
        done.set()
        await asyncio.wait_for(asyncio.gather(*watchers), timeout=60)
    everything = {(s, i) for s in sim_ids for i in range(15)}
    for before, after in seen:
        assert len(after) == len(set(after))
        assert not before & set(after)
        assert before | set(after) == everything
