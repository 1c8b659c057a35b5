"""Temporary names never collide with stored ones (issue 19): a sim file named like a partial
upload (`.x.part`) is kept by the start-up cleanup, because no accepted name can take the shape
of a temporary one."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cascade_core.models import FILE_NAME_PATTERN
from cascade_server.datadir import remove_partial_uploads
from cascade_server.partial_files import PARTIAL_GLOB, partial_path
from tests.conftest import ready_trace

ACCEPTED = re.compile(FILE_NAME_PATTERN)


@given(st.from_regex(ACCEPTED, fullmatch=True))
def test_no_accepted_name_looks_like_a_temporary_one(name):
    assert not fnmatch(f"sim-1/{name}", PARTIAL_GLOB)
    temporary = partial_path(Path("sim-1"), name)
    assert fnmatch(temporary.as_posix(), PARTIAL_GLOB) and not ACCEPTED.fullmatch(temporary.name)


async def test_a_file_named_like_a_partial_upload_survives_the_start_up_cleanup(make_server):
    server = await make_server()
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = (
            await http.post(
                "/api/runs",
                json={
                    "trace_id": "tinyformer-step-sm70",
                    "entries": [{"gpu_config": "SM7_QV100", "count": 1}],
                },
            )
        ).json()
        sim = run["sims"][0]["id"]
        for name in (".x.part", "x.part", ".x.1234abcd.part"):
            resp = await http.put(
                f"/api/sims/{sim}/files/{name}",
                content=b"kept",
                headers={"Content-Type": "application/octet-stream"},
            )
            assert resp.status_code == 200, resp.text
        assert (
            await http.put(
                f"/api/sims/{sim}/files/~x.part",
                content=b"no",
                headers={"Content-Type": "application/octet-stream"},
            )
        ).status_code == 422
        assert remove_partial_uploads(server.settings.files_dir) == 0  # what a restart runs
        listed = sorted(f["name"] for f in (await http.get(f"/api/sims/{sim}/files")).json())
        assert listed == [".x.1234abcd.part", ".x.part", "x.part"]
        for name in listed:
            assert (await http.get(f"/api/sims/{sim}/files/{name}")).content == b"kept"
