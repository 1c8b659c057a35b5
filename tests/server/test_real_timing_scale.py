"""Issue 32: a large real_timing.json (300,000 kernels, 12 MB) cost 5.5 s and 270 MB on every
`/comparison` and `/api/accuracy`, read and parsed again each time on the event loop, and
`/api/health` waited 4-5 s behind it. The file is read once, when the trace becomes ready, in a
process of its own (traces/real_timing_file.py); the requests answer from the stored rows (the
file is gone by then). How long the loop waits meanwhile is benchmarks/bench_real_timing.py's."""

from __future__ import annotations

import pytest

from tests.server.real_timing_scale import KERNELS, run_scenario


@pytest.mark.slow
async def test_a_big_real_timing_is_read_once_and_answered_from_stored_rows(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    out = await run_scenario(server)
    assert out.fields["has_real_timing"] and out.fields["real_timing_error"] is None
    assert out.rows == KERNELS
    assert out.comparison is not None and out.accuracy is not None
    assert out.comparison.status_code == 200 and out.accuracy.status_code == 200
    body = out.comparison.json()
    assert body["has_real_timing"] is True and len(body["rows"]) == KERNELS
    assert [r["real_ns"] for r in body["rows"][:3]] == [1000.0, 1001.0, 1002.0]
    assert all("sim_kernel_name" not in r for r in body["rows"][:15])
    assert body["rows"][-1]["sim_ns"] == {"SM7_QV100": None}
    [row] = out.accuracy.json()
    assert row["kernels"] == 15 and "kernels_unmatched" not in row
    # the server answered health checks all along (how soon: the benchmark)
    assert len(out.health_s) >= 1
