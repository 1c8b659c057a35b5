"""How logs, kernel stats and parser states are stored: compressed blobs that round-trip every
value a log can hold, and blobs written by earlier versions (zlib streams, plain-pickle parser
states) that still read, so a server upgraded in the middle of a sim carries on exactly."""

from __future__ import annotations

import math
import pickle
import zlib

import pytest

from cascade_server.storage.codecs import (
    DECOMPRESS_ERRORS,
    compress,
    decompress,
    pack,
    pack_lines,
    pack_state,
    pack_stats,
    unpack,
    unpack_lines,
    unpack_state,
    unpack_stats,
)
from tests.helpers import recording
from tests.server.test_ingest_events import QV100_CYCLES, half_a_sim, ingest  # noqa: F401

LINES = [
    ["gpu_sim_cycle = 6146", "", "  spaces  ", "tab\there", "é ☃ \U0001f600", "\udcff lone surrogate"],
    [],
    [""],
    ["x" * 100_000],
]


@pytest.mark.parametrize("lines", LINES)
def test_a_chunk_round_trips_line_for_line(lines):
    assert unpack_lines(pack_lines(lines)) == lines


def test_stats_round_trip_every_value_a_log_can_hold():
    stats = {
        "kernel_name": "inf",
        "a": math.inf,
        "b": -math.inf,
        "c": 1e300,
        "d": "none",
        "e": -0.0,
        "f": 3.5,
    }
    back = unpack_stats(pack_stats({**stats, "nan": math.nan}))
    assert math.isnan(back.pop("nan")) and back == stats
    assert list(back) == list(stats)  # in log order


def test_states_and_json_blobs_round_trip():
    state = {"version": 1, "block": {"kernel_name": "k", "x": 1.0}, "log_tail": ["a"], "latest": {"y": None}}
    assert unpack_state(pack_state(state)) == state and unpack_state(None) is None
    assert (
        unpack(pack({"rows": [1, 2.5, None, "s"]})) == {"rows": [1, 2.5, None, "s"]} and unpack(None) is None
    )


def test_blobs_written_before_compression_changed_still_read():
    text = b"line one\nline two\n"
    assert decompress(zlib.compress(text, 1)) == text == decompress(compress(text))
    assert unpack_lines(zlib.compress(text, 1)) == ["line one", "line two"]
    assert unpack_stats(zlib.compress(pickle.dumps({"a": 1.0}), 1)) == {"a": 1.0}
    state = {"version": 1, "block": None}
    assert unpack_state(pickle.dumps(state, protocol=5)) == state  # states were plain pickles


@pytest.mark.parametrize(
    "blob",
    [
        b"\x00",
        b"",
        compress(b"data")[:-3],
        b"\x28\xb5\x2f\xfd" + b"\x00" * 8,
        compress(b"data") + b"x",  # bytes after the frame
        compress(b"data") + compress(b"more"),
    ],
)
def test_a_damaged_blob_is_an_error_not_a_wrong_value(blob):
    with pytest.raises(DECOMPRESS_ERRORS):
        decompress(blob)


def test_every_single_bit_flip_of_a_stored_chunk_is_an_error_never_other_text():
    """The attacker's finding: without a checksum, two in three bit flips of a zstd chunk
    decoded to other text without an error (zlib streams always carried one)."""
    lines = [f"gpu_sim_cycle = {n}" for n in range(300)] + ["queue_avg = 0.069933", "n_ref = 2 req = 288"]
    blob = pack_lines(lines)
    for bit in range(len(blob) * 8):
        damaged = bytearray(blob)
        damaged[bit // 8] ^= 1 << (bit % 8)
        try:
            back = unpack_lines(bytes(damaged))
        except (*DECOMPRESS_ERRORS, UnicodeDecodeError):
            continue
        assert back == lines, f"bit {bit}: read back as other lines"


@pytest.mark.parametrize(
    "data",
    [pickle.dumps(print), pickle.dumps(ValueError("x")), pickle.dumps(None), pickle.dumps([1, 2])],
    ids=["a function", "an object", "nothing", "a list"],
)
def test_a_stored_pickle_of_anything_but_a_plain_map_is_refused_never_run(data):
    for blob in (data, compress(data)):  # a state saved before compression, and one after
        with pytest.raises((pickle.UnpicklingError, ValueError)):
            unpack_state(blob)
    with pytest.raises((pickle.UnpicklingError, ValueError)):
        unpack_stats(compress(data))


def test_a_frame_claiming_more_than_the_bound_is_refused_before_any_allocation(monkeypatch):
    from cascade_server.storage import codecs

    blob = compress(b"x" * 100)
    assert decompress(blob) == b"x" * 100
    monkeypatch.setattr(codecs, "MAX_BLOB_BYTES", 99)  # what a damaged header's size would pass
    with pytest.raises(DECOMPRESS_ERRORS):
        decompress(blob)


async def test_a_sim_stored_by_an_earlier_version_carries_on_exactly_after_an_upgrade(ingest):  # noqa: F811
    """Half a sim's log stored as an earlier version stored it (zlib chunks and stats, a plain
    pickle of a parser state that stands in the middle of a stats block); a restarted server
    parses the rest from that state and serves the whole log, byte for byte."""
    sim_id, parts, half, saved = await half_a_sim(ingest)
    state = unpack_state(saved)
    db = ingest.store.db.w
    await db.execute("UPDATE sims SET parser_state=? WHERE id=?", (pickle.dumps(state, protocol=5), sim_id))
    async with db.execute("SELECT seq, data FROM log_chunks WHERE sim_id=?", (sim_id,)) as cur:
        for seq, data in list(await cur.fetchall()):
            old = zlib.compress(decompress(data), 1)
            await db.execute("UPDATE log_chunks SET data=? WHERE sim_id=? AND seq=?", (old, sim_id, seq))
    async with db.execute("SELECT kernel_index, stats FROM kernels WHERE sim_id=?", (sim_id,)) as cur:
        for index, data in list(await cur.fetchall()):
            old = zlib.compress(decompress(data), 1)
            await db.execute(
                "UPDATE kernels SET stats=? WHERE sim_id=? AND kernel_index=?", (old, sim_id, index)
            )
    await db.commit()
    await ingest.restart()
    async with ingest.client() as http:
        for seq in range(half, len(parts)):
            resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": parts[seq]})
            assert resp.status_code == 204, resp.text
        results = await http.get(f"/api/sims/{sim_id}/results")
        assert results.status_code == 200, results.text
        kernels = results.json()["kernels"]
        assert [k["gpu_sim_cycle"] for k in kernels] == QV100_CYCLES
        assert all(
            k["stats"]["gpu_sim_cycle"] == k["gpu_sim_cycle"] for k in kernels
        )  # old and new stats read
        log = await http.get(f"/api/sims/{sim_id}/log")
        assert log.status_code == 200 and log.content == recording("SM7_QV100")
