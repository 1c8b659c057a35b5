"""Objects named like the mirror's temporary files are mirrored whole (issue 19's class of
temporary names that an accepted name can take): a bucket key may be any name, so downloads are
made outside the trace's mirror."""

from __future__ import annotations

import pytest

from .harness import sample_files


@pytest.mark.slow
async def test_objects_named_like_temporary_files_are_mirrored_whole(harness):
    extra = {
        "extra/a.bin": b"the file",
        "extra/.a.bin.part": b"not a temporary file",
        "extra/..a.bin.part.part": b"nor this",
    }
    harness.put_trace("temp-names", {**sample_files(), **extra})
    ready = await harness.recorder.wait_state("temp-names", "ready", "failed")
    assert ready.state == "ready", ready.error
    for rel, body in extra.items():
        assert (harness.mirror("temp-names") / rel).read_bytes() == body
    await harness.restart()  # a restart clears unfinished downloads, never a mirrored file
    for rel, body in extra.items():
        assert (harness.mirror("temp-names") / rel).read_bytes() == body
