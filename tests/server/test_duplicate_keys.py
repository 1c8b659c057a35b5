"""Issue 32: a JSON body that repeats a key in one object is refused with a 422 naming the key.
The parser kept the last value and dropped the others without a word: a run entry's `options`
given twice, the second empty, made a run without them."""

from __future__ import annotations

import pytest

from cascade_server.api.bodies import duplicate_key
from tests.helpers import create_run

JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    "body, key",
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"a": {"b": 1, "c": 2, "b": 3}}', "b"),
        ('[{"x": 1}, {"y": 1, "y": 1}]', "y"),
        ('{"a": 1, "b": {"a": 2}}', None),  # the same key in two objects is fine
        ('{"a": [1, 1], "b": "a"}', None),
        ("[]", None),
    ],
)
def test_duplicate_key(body, key):
    assert duplicate_key(body.encode()) == key


async def test_a_run_entry_with_options_twice_is_refused_and_no_run_is_made(core):
    body = (
        '{"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 1,'
        ' "options": {"-gpgpu_n_clusters": "40"}, "options": {}}]}'
    )
    async with core.client() as http:
        resp = await http.post("/api/runs", content=body, headers=JSON)
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"] == [
            {
                "loc": ["body"],
                "msg": "key 'options' appears twice in one object: send each key once",
                "type": "duplicate_key",
            }
        ]
        assert (await http.get("/api/runs")).json() == []


async def test_simulator_bodies_with_a_repeated_key_are_refused_and_nothing_is_stored(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim = run["sims"][0]["id"]
        beat = await http.post(
            f"/api/sims/{sim}/heartbeat", content='{"state": "running", "state": "failed"}', headers=JSON
        )
        assert beat.status_code == 422 and beat.json()["detail"][0]["type"] == "duplicate_key"
        assert (await http.post(f"/api/sims/{sim}/heartbeat", json={"state": "running"})).status_code == 200
        chunk = await http.post(
            f"/api/sims/{sim}/logs", content='{"seq": 0, "lines": ["kept?"], "lines": []}', headers=JSON
        )
        assert chunk.status_code == 422 and "'lines' appears twice" in chunk.json()["detail"][0]["msg"]
        assert (await http.get(f"/api/sims/{sim}/log")).text == ""
        ok = await http.post(f"/api/sims/{sim}/logs", json={"seq": 0, "lines": ["line"]})
        assert ok.status_code == 204
        assert (await http.get(f"/api/sims/{sim}/log")).text == "line\n"
