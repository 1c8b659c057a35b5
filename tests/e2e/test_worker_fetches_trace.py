"""A compute node without the server's filesystem: `cascade worker` fetches the trace's
simulator inputs over the API into local scratch, once per node, and removes them after."""

from __future__ import annotations

from pathlib import Path

import pytest

from cascade_core.trace_inputs import kernel_files
from cascade_server.traces.grouping import TraceFormatError
from cascade_server.traces.postprocess import PostprocessError, check_kernelslist_g
from tests.conftest import ready_trace
from tests.helpers import create_run, exit_status, finished_run
from tests.worker.fakes import install_fake_accelsim

pytestmark = pytest.mark.timeout(120)


def mirror_trace(server, trace_id: str, kernels: int, missing: int | None = None) -> None:
    traces = server.settings.traces_dir / trace_id / "traces"
    traces.mkdir(parents=True)
    names = [f"kernel-{i}.traceg" for i in range(1, kernels + 1)]
    (traces / "kernelslist.g").write_text("MemcpyHtoD,0x00007f4c5e000000,256\n" + "\n".join(names) + "\n")
    for i, name in enumerate(names, start=1):
        if i != missing:
            (traces / name).write_text(f"-kernel name = k{i}\n" * 1000)
    (traces / "kernel-1.trace").write_text("raw upload: never sent to a node\n")


@pytest.fixture
def node_worker(server, start_worker, tmp_path):
    """`node_worker(sim_id, scratch, **options)`: `cascade worker` of SM7_QV100 (a fake
    accel-sim.out) on a node without the server's filesystem: it fetches the inputs of
    tinyformer-step-sm70 over the API into `scratch`."""
    accelsim = install_fake_accelsim(tmp_path / "accelsim", {"SM7_QV100": {}})

    def start(sim_id: str, scratch: Path, **options: str):
        return start_worker(
            server,
            sim_id=sim_id,
            gpu_config="SM7_QV100",
            accelsim_dir=str(accelsim),
            trace_id="tinyformer-step-sm70",
            scratch_dir=str(scratch),
            **options,
        )

    return start


def test_kernelslist_names_only_files_beside_it():
    text = "MemcpyHtoD,0x1,256\nkernel-1.traceg\n\n../../etc/passwd\nkernel-2.traceg\n"
    assert kernel_files(text) == ["traces/kernel-1.traceg", "traces/kernel-2.traceg"]


def test_kernelslist_comments_and_paths_name_no_kernel_and_a_kernel_path_is_refused():
    """As Accel-Sim's trace_parser.cc: only a line starting with `kernel` is a kernel; a line
    with leading blanks, a comment, a MemcpyDtoH, a path not starting with `kernel` are ignored."""
    text = (
        "# kernel-9.traceg\nMemcpyHtoD,0x1,256\r\ndir/x.traceg\nkernel-1.traceg\n  kernel-2.traceg\n"
        "MemcpyDtoH,0x00007f4c5e000000,256\n../../../work/atk/ESCAPED/made-by-shard\nkernel-3.traceg"
    )
    assert kernel_files(text) == ["traces/kernel-1.traceg", "traces/kernel-3.traceg"]
    with pytest.raises(TraceFormatError, match="line 2: kernel trace 'kernels/x.traceg' is not a file name"):
        kernel_files("kernel-1.traceg\nkernels/x.traceg\n")


@pytest.mark.parametrize(
    "line, problem",
    [
        ("kernel/../../../tmp/x", "is not a file name"),
        ("kernel-1\\..\\x", "is not a file name"),
        ("kernel-1.traceg\r", "ends in a carriage return"),
        ("kernel-1.traceg  ", "ends in blanks"),
        ("kernel-1\x00.traceg", "control character"),
        ("kernelslist.g", "is the list itself"),
    ],
)
def test_a_kernel_line_must_be_a_plain_file_name_beside_the_list(line, problem):
    with pytest.raises(TraceFormatError, match=f"line 2: kernel trace .* {problem}"):
        kernel_files(f"MemcpyHtoD,0x1,256\n{line}\n")


def test_the_ready_check_reads_kernelslist_as_the_inputs_do(tmp_path):
    """check_kernelslist_g (which marks a trace ready) and /inputs share kernel_files: what the
    check accepts is exactly what /inputs serves, and a path or a directory is refused."""
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "kernel-1.traceg").write_text("-kernel name = k1\n")
    (traces / "kernelslist.g").write_text("# a comment\nkernel-1.traceg\n")
    check_kernelslist_g(traces)
    (traces / "kernelslist.g").write_text("kernel-1.traceg\nkernel-x/y.traceg\n")
    with pytest.raises(
        PostprocessError, match="traces/kernelslist.g line 2: kernel trace 'kernel-x/y.traceg'"
    ):
        check_kernelslist_g(traces)
    (traces / "kernel-2.traceg").mkdir()
    (traces / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    with pytest.raises(PostprocessError, match="names kernel-2.traceg, which is not in the upload"):
        check_kernelslist_g(traces)


async def test_trace_inputs_errors_are_json_and_unknown_parameters_a_422(server, client):
    await server.store.traces.put_trace(ready_trace())
    mirror_trace(server, "tinyformer-step-sm70", kernels=3, missing=2)
    (server.settings.traces_dir / "tinyformer-step-sm70" / "traces" / "kernel-3.traceg").unlink()
    (server.settings.traces_dir / "tinyformer-step-sm70" / "traces" / "kernel-3.traceg").mkdir()
    resp = await client.get("/api/traces/tinyformer-step-sm70/inputs", params={"kernels": "all"})
    assert resp.status_code == 422
    [error] = resp.json()["detail"]
    assert error["loc"] == ["query", "kernels"] and "Extra inputs are not permitted" in error["msg"]
    for path in ("traces/kernel-2.traceg", "traces/kernel-3.traceg"):  # missing; a directory
        resp = await client.get(f"/api/traces/tinyformer-step-sm70/inputs/{path}")
        assert (resp.status_code, resp.json()) == (
            409,
            {"detail": f"trace tinyformer-step-sm70 lacks {path} on the server"},
        )
    resp = await client.get("/api/traces/tinyformer-step-sm70/inputs")
    assert (resp.status_code, resp.json()) == (
        409,
        {"detail": "trace tinyformer-step-sm70 lacks traces/kernel-2.traceg on the server"},
    )
    (server.settings.traces_dir / "tinyformer-step-sm70" / "traces" / "kernelslist.g").write_text(
        "kernel-1.traceg\n# c\n"
    )
    listing = (await client.get("/api/traces/tinyformer-step-sm70/inputs")).json()
    assert [f["path"] for f in listing["files"]] == ["traces/kernelslist.g", "traces/kernel-1.traceg"]


async def test_a_worker_without_the_trace_fetches_it_over_the_api(server, node_worker, tmp_path):
    await server.store.traces.put_trace(ready_trace())
    mirror_trace(server, "tinyformer-step-sm70", kernels=3)
    node = tmp_path / "node-scratch"
    async with server.client() as http:
        listing = (await http.get("/api/traces/tinyformer-step-sm70/inputs")).json()
        assert [f["path"] for f in listing["files"]] == [
            "traces/kernelslist.g",
            "traces/kernel-1.traceg",
            "traces/kernel-2.traceg",
            "traces/kernel-3.traceg",
        ]
        run = await create_run(http, [("SM7_QV100", 2)])
        workers = [
            node_worker(sim["id"], node, trace_dir=str(tmp_path / "not-on-this-node")) for sim in run["sims"]
        ]
        for worker in workers:
            assert await exit_status(worker) == 0, worker.stdout.read().decode()
        final = await finished_run(http, run["id"])
        assert [s["state"] for s in final["sims"]] == ["succeeded", "succeeded"], final["sims"]
    # the last worker of the trace on this node removed the copy
    assert not (node / "cascade-traces" / "tinyformer-step-sm70").exists()


async def test_a_trace_the_server_cannot_serve_fails_the_sim_with_the_reason(server, node_worker, tmp_path):
    await server.store.traces.put_trace(ready_trace())
    mirror_trace(server, "tinyformer-step-sm70", kernels=2, missing=2)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        worker = node_worker(run["sims"][0]["id"], tmp_path / "node")
        assert await exit_status(worker) != 0
        final = await finished_run(http, run["id"])
        assert final["sims"][0]["state"] == "failed"
        assert final["sims"][0]["error"] == (
            "cannot list trace tinyformer-step-sm70's files: HTTP 409 "
            "trace tinyformer-step-sm70 lacks traces/kernel-2.traceg on the server"
        )


async def test_trace_inputs_routes_refuse_what_they_cannot_serve(server, client):
    await server.store.traces.put_trace(ready_trace())
    await server.store.traces.put_trace(ready_trace("uploading-one", state="uploading"))
    mirror_trace(server, "tinyformer-step-sm70", kernels=1)
    assert (await client.get("/api/traces/nope/inputs")).json() == {"detail": "trace nope not found"}
    resp = await client.get("/api/traces/uploading-one/inputs")
    assert resp.status_code == 409 and resp.json() == {
        "detail": "trace uploading-one is uploading, not ready"
    }
    resp = await client.get("/api/traces/tinyformer-step-sm70/inputs/traces/kernel-1.trace")
    assert resp.status_code == 404  # the raw upload is not a simulator input
    resp = await client.get("/api/traces/tinyformer-step-sm70/inputs/traces/kernel-1.traceg")
    assert resp.status_code == 200 and resp.content.startswith(b"-kernel name = k1")
    async with server.client(token=None) as anonymous:
        assert (await anonymous.get("/api/traces/tinyformer-step-sm70/inputs")).status_code == 401
