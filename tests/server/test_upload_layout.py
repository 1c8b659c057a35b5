"""Issue 13: `cascade upload` refuses, before sending anything, a directory the server's
post-processor is certain to fail (the same rule, `postprocess.layout_problem`)."""

from __future__ import annotations

import shutil

import pytest

from cascade_core.upload_rules import layout_problem

from .test_trace_helpers import raw_dir_for_upload
from .test_upload import env_for, run_cli

NO_TRACES = "the upload has no traces/ directory"
NO_LIST = "the upload has neither traces/kernelslist.g nor a raw traces/kernelslist"


@pytest.fixture
def bucket(rclone_s3):
    name = "layout-checks"
    client = rclone_s3.client()
    if name not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=name)
    return name


@pytest.mark.parametrize(
    ("paths", "problem"),
    [
        (["traces/kernelslist", "traces/kernel-1.trace"], None),
        (["traces/kernelslist.g", "traces/kernel-1.traceg.gz"], None),
        (["traces/kernelslist_ctx_0x5", "traces/kernel-1.trace.xz", "real_timing.json"], None),
        (["real_timing.json", "notes.txt"], NO_TRACES),
        ([], NO_TRACES),
        (["traces/kernel-1.trace", "traces/stats.csv"], NO_LIST),
        (["traces/.kernelslist.part", "traces/kernel-1.trace"], NO_LIST),
        (["traces/sub/kernelslist", "traces/kernel-1.trace"], NO_LIST),  # the server looks in traces/ only
    ],
)
def test_layout_problem_is_the_post_processors_rule(paths, problem):
    assert layout_problem(paths) == problem


def _without_kernel_list(tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    (traces / "kernelslist").unlink()
    return traces


def _without_traces_folder(tmp_path):
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / "real_timing.json").write_text("{}")
    (folder / "kernel_mapping.json").write_text("{}")
    return folder


def _a_holder_of_a_bad_traces_folder(tmp_path):
    traces = _without_kernel_list(tmp_path)
    return traces.parent


@pytest.mark.parametrize(
    ("make_dir", "problem"),
    [
        (_without_kernel_list, NO_LIST),
        (_without_traces_folder, NO_TRACES),
        (_a_holder_of_a_bad_traces_folder, NO_LIST),
    ],
)
def test_upload_refuses_what_the_server_would_fail_before_sending_anything(
    rclone_s3, bucket, tmp_path, make_dir, problem
):
    directory = make_dir(tmp_path)
    result = run_cli(str(directory), "--trace-id", "doomed", env=env_for(rclone_s3, bucket, tmp_path))
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"cascade upload: {directory}: the server would refuse this trace: {problem}"
    )
    assert result.stdout == ""
    listing = rclone_s3.client().list_objects_v2(Bucket=bucket, Prefix="accelsim-traces/doomed/")
    assert listing.get("Contents", []) == []


def test_an_upload_the_server_accepts_still_goes_up(rclone_s3, bucket, tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    shutil.copy(traces / "kernelslist", traces / "kernelslist_ctx_0x1")
    (traces / "kernelslist").unlink()
    result = run_cli(
        str(traces), "--trace-id", "fine", "--arch", "sm_70", env=env_for(rclone_s3, bucket, tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fine"
