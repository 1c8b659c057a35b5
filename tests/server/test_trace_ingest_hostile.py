"""Hostile objects against the real scanner over a real `rclone serve s3`: none may stop ingestion.
Each fails its own trace with a reason (or, for big valid objects, simply works), and every trace
id sorting after it still registers."""

from __future__ import annotations

import json
import logging
import os

import pytest

from cascade_core.s3_endpoint import make_client
from cascade_core.trace_upload import LocalFile, build_metadata, upload_trace

from .harness import Harness, sample_files

MiB = 1024 * 1024


@pytest.fixture
async def scanner(request, tmp_path):
    """A scanner over its own bucket of the session's rclone (`Harness`)."""
    h = await Harness(request.getfixturevalue("rclone_s3"), tmp_path).start()
    yield h
    await h.stop()


@pytest.mark.slow
async def test_objects_over_8_mib_in_one_put_are_mirrored_and_later_traces_still_register(scanner):
    # A profiler's plain S3 client (boto3 defaults) puts each file in one PUT: rclone then answers
    # GETs of objects over 8 MiB with a checksum boto3's default validation rejects.
    big = {"traces/real_timing.json": b"[" + b" " * (9 * MiB) + b"]", "traces/blob.bin": os.urandom(20 * MiB)}
    files = {**sample_files(), **big}
    scanner.put_trace("big-objects", files)
    scanner.put_trace("zz-after-big", sample_files())

    ready = await scanner.recorder.wait_state("big-objects", "ready", "failed")
    assert ready.state == "ready", ready.error
    for rel, body in big.items():
        assert (scanner.mirror("big-objects") / rel).read_bytes() == body
    after = await scanner.recorder.wait_state("zz-after-big", "ready", "failed")
    assert after.state == "ready", after.error


@pytest.mark.slow
async def test_cascade_upload_sends_a_12_mib_file_in_one_put_that_the_scanner_mirrors(scanner, tmp_path):
    # `cascade upload` sends files under its 64 MiB multipart threshold in one PUT.
    path = tmp_path / "blob.bin"
    path.write_bytes(os.urandom(12 * MiB))
    files = [LocalFile(p, p.relative_to(tmp_path).as_posix(), p.stat().st_size) for p in [path]]
    sample = tmp_path / "sample"
    for rel, body in sample_files().items():
        (sample / rel).parent.mkdir(parents=True, exist_ok=True)
        (sample / rel).write_bytes(body)
        files.append(LocalFile(sample / rel, rel, len(body)))
    client = make_client(scanner.info)
    upload_trace(client, scanner.bucket, "uploaded-12mib", files, build_metadata("uploaded-12mib", files, {}))

    ready = await scanner.recorder.wait_state("uploaded-12mib", "ready", "failed")
    assert ready.state == "ready", ready.error
    assert (scanner.mirror("uploaded-12mib") / "blob.bin").read_bytes() == path.read_bytes()
    # What boto3's defaults (any other S3 client) read back is the same bytes, checksum and all.
    body = scanner.client.get_object(Bucket=scanner.bucket, Key="accelsim-traces/uploaded-12mib/blob.bin")[
        "Body"
    ]
    assert body.read() == path.read_bytes()


async def test_an_object_that_cannot_be_mirrored_fails_its_trace_not_the_scan(scanner, caplog):
    # Where the mirror cannot write (here its trace directory is a file: a name too long for the
    # mirror's temporary file once did this, before downloads went to a short temporary name).
    scanner.settings.traces_dir.mkdir(parents=True, exist_ok=True)
    (scanner.mirror("aa-unmirrorable")).write_bytes(b"in the way")
    name = "traces/kernel-1.traceg"
    scanner.put("aa-unmirrorable", name, b"x")
    scanner.put("aa-unmirrorable", "metadata.json", b"{}")
    scanner.put_trace("zz-after-unmirrorable", sample_files())

    with caplog.at_level(logging.WARNING):
        failed = await scanner.recorder.wait_state("aa-unmirrorable", "failed", "ready")
        assert failed.error.startswith("could not mirror metadata.json: ")  # the first in order
        assert "File exists" in failed.error and "\n" not in failed.error
        after = await scanner.recorder.wait_state("zz-after-unmirrorable", "ready", "failed")
        assert after.state == "ready", after.error
        await scanner.scanner.wait_for_scan()
        await scanner.scanner.wait_for_scan()
    warnings = [r.getMessage() for r in caplog.records if "aa-unmirrorable" in r.getMessage()]
    assert len(warnings) == 1, warnings


async def test_a_255_byte_name_is_mirrored(scanner):
    # Fine for S3 and rclone; the mirror's temporary file once made it 261 bytes, too long.
    long_name = "traces/" + "k" * 255
    scanner.put_trace("long-name", {**sample_files(), long_name: b"x"})
    ready = await scanner.recorder.wait_state("long-name", "ready", "failed")
    assert ready.state == "ready", ready.error
    assert (scanner.mirror("long-name") / long_name).read_bytes() == b"x"


@pytest.mark.parametrize(
    "name, body, error",
    [
        (
            "bigint",
            b'{"files": [], "model": ' + b"9" * 5000 + b"}",
            "metadata.json is not valid JSON: an integer of more than 4300 digits",
        ),
        ("deep", b"[" * 100_000 + b"]" * 100_000, "metadata.json is not valid JSON: nested too deeply"),
    ],
    # Short ids: pytest puts the test's id in PYTEST_CURRENT_TEST, which the post-processor's
    # process inherits, and an id holding the 200 kB body fails its exec (E2BIG).
    ids=["bigint", "deep"],
)
async def test_hostile_metadata_fails_its_trace_once_and_later_traces_still_register(
    scanner, caplog, name, body, error
):
    scanner.put(f"aa-{name}", "traces/kernel-1.traceg", b"x")
    scanner.put(f"aa-{name}", "metadata.json", body)
    scanner.put_trace(f"zz-after-{name}", sample_files())

    with caplog.at_level(logging.WARNING):
        failed = await scanner.recorder.wait_state(f"aa-{name}", "failed", "ready")
        assert failed.error == error
        after = await scanner.recorder.wait_state(f"zz-after-{name}", "ready", "failed")
        assert after.state == "ready", after.error
        for _ in range(3):
            await scanner.scanner.wait_for_scan()
    assert scanner.recorder.states(f"aa-{name}")[-1] == "failed"
    stored = await scanner.store.traces.get_trace(f"aa-{name}")
    assert stored.state == "failed" and stored.metadata is None
    # One warning names the trace; later scans leave the failed trace alone.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len([w for w in warnings if f"aa-{name}" in w]) == 1, warnings
    json.dumps(stored.model_dump(mode="json"))  # and the API can serve it
