"""Step timelines end to end: `cascade upload --profile` to the embedded S3 endpoint, the app
registers the trace, a run on the local launcher (stand-in sims, real `cascade worker`
subprocesses) sends a step timeline per succeeded sim, and real timing reaches /comparison."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from cascade_server.traces.embedded_s3 import embedded_s3
from tests.helpers import create_run, finished_run, free_port, wait_until
from tests.server.test_trace_helpers import raw_dir_for_upload
from tests.timeline.profiles import SAMPLED, load, steps_by_correlation, write_trace_dir

pytestmark = pytest.mark.timeout(280)


async def _upload(settings, directory, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASCADE_", "AWS_ACCESS", "AWS_SECRET"))}
    env["CASCADE_DATA_DIR"] = str(settings.data_dir)
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "cascade_tui.cli", "upload", str(directory), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
    )


async def test_upload_with_a_profile_then_a_run_sends_step_timelines(
    make_server, make_settings, tmp_path, monkeypatch
):
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    settings = make_settings(
        s3_port=free_port(), scan_interval_s=0.1, launcher="local", local_slots=2, replay_speed=50.0
    )
    # What the user has: the tracer's traces/ folder (two real raw kernel traces), whose stats.csv
    # lists the kernels of one profiled step, and the profile of the same workload.
    traces = raw_dir_for_upload(tmp_path)
    step = steps_by_correlation(load(SAMPLED))[0]
    write_trace_dir(traces.parent, step)  # rewrites traces/stats.csv
    async with embedded_s3(settings):
        bad = await _upload(settings, traces, "--trace-id", "nope", "--profile", str(tmp_path / "none.json"))
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "--profile:" in bad.stderr

        uploaded = await _upload(settings, traces, "--trace-id", "with-profile", "--profile", str(SAMPLED))
        assert uploaded.returncode == 0, uploaded.stderr
        assert "profile: steps: 2" in uploaded.stderr and "profile: GPU time covered" in uploaded.stderr
        server = await make_server(
            **{
                k: getattr(settings, k)
                for k in ("s3_port", "scan_interval_s", "port", "launcher", "local_slots", "replay_speed")
            }
        )
        async with server.client() as http:

            async def ready():
                resp = await http.get("/api/traces/with-profile")
                return (
                    resp.json()
                    if resp.status_code == 200 and resp.json()["state"] in ("ready", "failed")
                    else None
                )

            trace = await wait_until(ready, 60)
            assert (trace["state"], trace["error"]) == ("ready", None)
            assert trace["has_real_timing"] is True and trace["has_step_timeline"] is True
            # stats.csv lists the whole step, kernelslist.g the two kernels the simulator runs: the
            # trace's kernels are those two (the step timeline still maps every launch)
            assert trace["kernel_count"] == 2 and len(trace["kernels"]) == 2
            # Given the traces/ folder, the files went under traces/: found where metadata.json says.
            listed = {f["key"].split("/", 2)[2] for f in trace["metadata"]["files"]}
            assert {
                "traces/real_timing.json",
                "traces/corrected_timeline.json",
                "traces/kernel_mapping.json",
            } <= listed

            # A node without the server's filesystem fetches them with the simulator inputs.
            inputs = [f["path"] for f in (await http.get("/api/traces/with-profile/inputs")).json()["files"]]
            assert inputs[-3:] == [
                "metadata.json",
                "traces/corrected_timeline.json",
                "traces/kernel_mapping.json",
            ]
            fetched = await http.get("/api/traces/with-profile/inputs/traces/kernel_mapping.json")
            assert fetched.status_code == 200 and fetched.json()["trace_kernels"] == len(step)

            run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)], trace_id="with-profile")
            final = await finished_run(http, run["id"], timeout=200)
            assert final["state"] == "succeeded" and final["replay"] is True
            timelines = (await http.get(f"/api/runs/{run['id']}/step-timelines")).json()
            assert [(t["gpu_config"], t["replica"]) for t in timelines] == [
                ("SM7_QV100", 0),
                ("SM7_TITANV", 0),
            ]
            assert {t["sim_id"] for t in timelines} == {s["id"] for s in final["sims"]}
            for entry in timelines:
                simulated, compared = entry["simulated"], entry["compare"]
                assert [s["name"] for s in simulated["steps"]] == ["ProfilerStep#551", "ProfilerStep#552"]
                coverage = simulated["summary"]["simulation"]["coverage"]
                # The stand-in replays a 15-kernel recording: the launches mapped to trace kernels 1..15
                # get its times (all 15 in the traced step, the ones that align in the other).
                assert (
                    coverage["kernels"] == 2 * len(step) and coverage["steps"][0]["simulated_kernels"] == 15
                )
                assert 15 < coverage["simulated_kernels"] <= 30
                assert simulated["meta"]["gpu_config"] == entry["gpu_config"]
                assert compared["summary"]["wall_ns"]["count"] == 2
                assert compared["steps"][0]["real_wall_ns"] > 0
                files = {f["name"] for f in (await http.get(f"/api/sims/{entry['sim_id']}/files")).json()}
                assert "step-timeline-error.txt" not in files
            # The Perfetto export adds each sim's predicted steps as slices, laid end to end.
            perfetto = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()["traceEvents"]
            steps = [e for e in perfetto if e.get("cat") == "step"]
            assert len(steps) == 2 * 2 and {e["name"] for e in steps} == {
                "ProfilerStep#551 (step)",
                "ProfilerStep#552 (step)",
            }
            first = [e for e in steps if e["pid"] == steps[0]["pid"] and e["tid"] == steps[0]["tid"]]
            assert first[1]["ts"] == pytest.approx(first[0]["ts"] + first[0]["dur"])
            assert first[0]["args"]["real_wall_ns"] > 0 and first[0]["args"]["wall_error_pct"] is not None
            comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
            assert comparison["has_real_timing"] is True
            assert len(comparison["rows"]) == len(step)
            assert comparison["rows"][0]["real_ns"] == pytest.approx(step[0]["dur"] * 1000.0)
            assert all(row["real_ns"] is not None for row in comparison["rows"])
