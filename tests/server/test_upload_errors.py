"""`cascade upload` refuses bad settings and a broken metadata.json with one line and exit 2,
before it sends anything (no S3 endpoint needs to answer)."""

from __future__ import annotations

import pytest

from cascade_core.trace_upload import read_metadata_fields

from .test_trace_helpers import raw_dir_for_upload
from .test_upload import run_cli

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "CASCADE_S3_BUCKET": "b"}


def test_a_malformed_endpoint_is_one_line_and_exit_2(tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    env = {**CREDENTIALS, "CASCADE_S3_ENDPOINT": "http://[::1", "CASCADE_DATA_DIR": str(tmp_path / "data")}
    result = run_cli(str(traces), "--trace-id", "x", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("cascade upload: invalid S3 endpoint 'http://[::1'"), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("text", "problem"), [("{not json", "is not valid JSON"), ("[1, 2]", "is not a JSON object")]
)
def test_a_metadata_json_it_cannot_parse_stops_the_upload(tmp_path, text, problem):
    traces = raw_dir_for_upload(tmp_path)
    (traces / "metadata.json").write_text(text)
    env = {
        **CREDENTIALS,
        "CASCADE_S3_ENDPOINT": "http://127.0.0.1:9",
        "CASCADE_DATA_DIR": str(tmp_path / "data"),
    }
    result = run_cli(str(traces), "--trace-id", "x", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"cascade upload: {traces / 'metadata.json'} {problem}"), result.stderr
    assert result.stderr.count("\n") == 1


def test_metadata_fields_come_from_a_valid_file_and_none_without_one(tmp_path):
    assert read_metadata_fields(tmp_path) == {}
    (tmp_path / "metadata.json").write_text('{"model": "m", "files": [], "unknown": 1}')
    assert read_metadata_fields(tmp_path) == {"model": "m"}
