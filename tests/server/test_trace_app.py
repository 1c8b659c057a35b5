"""Traces through the real app: `cascade upload` to a real `rclone serve s3`, the app's scanner
registers and processes it, and GET /api/traces shows it, across a server restart."""

from __future__ import annotations

import pytest

from cascade_server.traces.embedded_s3 import embedded_s3, upload_demo_traces
from cascade_server.traces.ingest import TRACE_SCANNER_KEY
from tests.helpers import free_port, wait_until


async def wait_for(client, trace_id: str, *states: str, timeout: float = 60) -> dict:
    """The trace once it is in one of `states`."""

    async def in_state() -> dict | None:
        resp = await client.get(f"/api/traces/{trace_id}")
        return resp.json() if resp.status_code == 200 and resp.json()["state"] in states else None

    return await wait_until(in_state, timeout)


@pytest.mark.slow
async def test_demo_traces_through_the_embedded_endpoint_become_ready_via_the_api(make_server, make_settings):
    settings = make_settings(s3_port=free_port(), samples=True, scan_interval_s=0.1)
    async with embedded_s3(settings) as s3info:  # as `cascade serve` does, before the app starts
        assert await upload_demo_traces(s3info, settings) == ["tinyformer-step-sm70", "tinyformer-step-sm75"]
        server = await make_server(
            **{k: getattr(settings, k) for k in ("s3_port", "samples", "scan_interval_s", "port")}
        )
        assert TRACE_SCANNER_KEY in server.app
        async with server.client() as client:
            sm70 = await wait_for(client, "tinyformer-step-sm70", "ready", "failed")
            sm75 = await wait_for(client, "tinyformer-step-sm75", "ready", "failed")
            assert (sm70["state"], sm70["error"], sm75["state"]) == ("ready", None, "ready")
            assert (sm70["trace_gpu_arch"], sm70["suggested_sim_config"], sm70["kernel_count"]) == (
                "sm_70",
                "SM7_QV100",
                15,
            )
            assert [k["kernel_id"] for k in sm70["kernels"]] == list(range(1, 16))
            assert sm75["trace_gpu_arch"] == "sm_75" and sm75["metadata"]["sample_set"] == "tinyformer-step"
            listed = {t["id"]: t for t in (await client.get("/api/traces")).json()}
            assert (
                listed["tinyformer-step-sm70"]["state"] == "ready"
                and "kernels" not in listed["tinyformer-step-sm70"]
            )
            # The mirror is what a worker gets as its trace directory.
            assert (settings.traces_dir / "tinyformer-step-sm70" / "traces" / "kernel-1.traceg").is_file()

            await server.restart()
            again = (await client.get("/api/traces/tinyformer-step-sm70")).json()
            assert again["updated_at"] == sm70["updated_at"]  # ready traces are not processed again


async def test_an_external_endpoint_is_scanned_with_aws_credentials(
    make_server, rclone_s3, monkeypatch, tmp_path
):
    rclone_s3.client().create_bucket(Bucket="external")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", rclone_s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", rclone_s3.secret_key)
    server = await make_server(s3_endpoint=rclone_s3.endpoint, s3_bucket="external", scan_interval_s=0.1)
    rclone_s3.client().put_object(
        Bucket="external", Key="accelsim-traces/ext-1/traces/kernel-1.trace", Body=b"x"
    )
    async with server.client() as client:
        trace = await wait_for(client, "ext-1", "uploading")
        assert (trace["kernel_count"], trace["bytes"], trace["metadata"], trace["kernels"]) == (
            1,
            1,
            None,
            [],
        )
