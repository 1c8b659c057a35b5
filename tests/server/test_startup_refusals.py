"""Issue 19: settings that would let `cascade serve` start and then fail at every request (a
token no header can carry, sbatch arguments that hide Cascade's own jobs) are refused at start,
with one clear line. A real `cascade serve` process each time."""

from __future__ import annotations

import pytest

from cascade_core.setting_errors import reserved_option_problem
from tests.helpers import ServeProcess
from tests.server.test_serve_cli import serve


def refused(serving: ServeProcess) -> str:
    """The one line a refused start prints; the process has exited with 1 or 2."""
    proc = serving.spawn()
    try:
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = serving.logged()
    assert code in (1, 2), err
    assert err.count("\n") == 1 and err.startswith("cascade serve: "), err
    return err


@pytest.mark.parametrize(
    "token", ["abc\ndef", "abc\rdef", "tab\there", "caf\u00e9-token", "two words", "nul\x00x"]
)
def test_a_token_no_header_can_carry_is_refused_at_start(tmp_path, token):
    if "\x00" in token:  # an environment variable cannot hold NUL: the token file can
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "token").write_text(token + "\n")
        err = refused(serve(tmp_path / "data"))
        assert "the token in" in err
    else:
        err = refused(serve(tmp_path / "data", CASCADE_TOKEN=token))
        assert "CASCADE_TOKEN" in err
    assert "an HTTP header cannot carry" in err


def test_a_token_file_with_a_newline_inside_is_refused_at_start(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "token").write_text("first-line\nsecond-line\n")
    err = refused(serve(tmp_path / "data"))
    assert "the token in" in err and "'\\n'" in err and "first-line" not in err


@pytest.mark.parametrize(
    "args",
    [
        "-J mine",
        "-Jmine",
        "--job-name=mine",
        "--job-name mine",
        "--job=mine",
        "--mem=8G --job-name=mine",
        "--array=0-3",
        "--export=ALL",
        "-a 0-1",
    ],
)
def test_slurm_args_that_override_cascades_job_options_are_refused_at_start(tmp_path, args):
    env = dict(CASCADE_LAUNCHER="slurm", CASCADE_SLURM_LOCAL="1", CASCADE_SLURM_ARGS=args)
    err = refused(serve(tmp_path / "data", **env))
    assert "CASCADE_SLURM_ARGS may not set --" in err and "remove it" in err


@pytest.mark.parametrize(
    "args", ["--mem=8G --qos=long", "--time=1:00:00", "-p gpu", "--jobid-unrelated-x", "-n 1"]
)
def test_other_slurm_args_are_fine(args):
    assert reserved_option_problem(args.split()) is None
