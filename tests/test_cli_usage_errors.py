"""Every `cascade` subcommand answers a usage error the same way: one line on stderr naming the
command and the problem, pointing at --help, and exit code 2 (argparse's default is the whole
usage block, then the error)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cascade_core.cli_usage import OneLineErrorParser, spelled_out
from cascade_tui.cli import SUBCOMMANDS, main


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_an_unknown_flag_is_one_line_and_exit_2(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--no-such-flag"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"cascade {name}: ") and err.rstrip().endswith("(--help for usage)"), err
    assert "usage:" not in err  # (a missing required argument is named before the unknown flag)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["upload"], "cascade upload: the following arguments are required: "),
        (["timeline", "import"], "cascade timeline import: the following arguments are required: "),
        (["simulate", "only-one"], "cascade simulate: the following arguments are required: "),
        (["tui", "--refresh-hz", "fast"], "cascade tui: argument --refresh-hz: invalid float value: 'fast'"),
        (
            ["run", "start", "--trace", "t", "--config", "SM7_QV100", "--shards", "65"],
            "cascade run start: argument --shards: must be from 1 to 64 (got 65)",
        ),
        (
            ["run", "start", "--trace", "t", "--config", "SM7_QV100", "--shards", "2.5"],
            "cascade run start: argument --shards: must be a whole number from 1 to 64 (got '2.5')",
        ),
        (
            ["run", "start", "--trace", "t", "--config", "SM7_QV100", "--warmup-kernels", "-1"],
            "cascade run start: argument --warmup-kernels: must be from 0 to 1000000 (got -1)",
        ),
    ],
)
def test_missing_or_bad_arguments_are_one_line_too(argv, words, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert (exc.value.code, err.count("\n")) == (2, 1), err
    assert err.startswith(words), err


def test_an_unknown_command_is_one_line_naming_the_commands():
    done = subprocess.run([sys.executable, "-m", "cascade_tui.cli", "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("cascade: unknown command 'nope' (commands: up, serve, tui, ")
    assert done.stderr.rstrip().endswith("; cascade --help says what each does)")


def test_help_still_shows_the_whole_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["upload", "--help"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("usage: cascade upload")


def test_control_characters_in_an_error_are_spelled_out(capsys):
    parser = OneLineErrorParser(prog="cascade x")
    parser.add_argument("--n", type=int)
    with pytest.raises(SystemExit):
        parser.parse_args(["--n", "\x1b[2J"])
    assert "\\x1b[2J" in capsys.readouterr().err
    assert spelled_out("a\nb") == "a\\nb" and spelled_out("plain") == "plain"


def cascade(*argv: str | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`cascade ARGV...` as a real process; bytes arguments go to it as they are (a shell's $'\\xff')."""
    return subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *argv], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    "argv, where",
    [
        ([b"run", b"show", b"\xff"], "cascade run: argument '\\xff'"),
        ([b"run", b"delete", b"\xff"], "cascade run: argument '\\xff'"),
        ([b"results", b"\xff"], "cascade results: argument '\\xff'"),
        ([b"traces", b"--delete", b"\xff"], "cascade traces: argument of --delete '\\xff'"),
        (
            [b"run", b"start", b"--trace", b"t\xfe", b"--config", b"SM7_QV100"],
            "cascade run: argument of --trace 't\\xfe'",
        ),
        (
            [b"run", b"start", b"--trace", b"t", b"--config", b"\xff"],
            "cascade run: argument of --config '\\xff'",
        ),
        (
            [b"runs", b"--url", b"http://127.0.0.1:1/\xff"],
            "cascade runs: argument of --url 'http://127.0.0.1:1/\\xff'",
        ),
        (
            [b"runs", b"--url=http://127.0.0.1:1/\xff\x1b[2J"],
            "cascade runs: argument '--url=http://127.0.0.1:1/\\xff\\x1b[2J'",
        ),
        ([b"\xff"], "cascade: argument '\\xff'"),
    ],
)
def test_an_argument_that_is_not_utf8_is_refused_in_one_line_naming_it(argv, where):
    done = cascade(*argv)
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (2, "", 1), done.stderr
    assert done.stderr == f"{where} is not valid UTF-8 (--help for usage)\n"


def test_cascade_without_a_command_prints_usage_on_stderr_and_exits_2():
    done = cascade()
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("usage: cascade <command>")


@pytest.mark.parametrize(
    "argv, line",
    [
        ([], "cascade worker: missing --url/CASCADE_URL and --sim-id/CASCADE_SIM_ID (--help for usage)"),
        (
            ["--url", "http://127.0.0.1:1", "--sim-id", "s", "--speed", "nan"],
            "cascade worker: --speed/CASCADE_REPLAY_SPEED: Input should be a finite number (--help for usage)",
        ),
        (
            ["--url", "http://127.0.0.1:1", "--sim-id", "s", "--speed", "-1"],
            "cascade worker: --speed/CASCADE_REPLAY_SPEED: Input should be greater than 0 (--help for usage)",
        ),
    ],
)
def test_worker_setting_errors_are_one_line_and_exit_2(argv, line):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")}
    done = cascade("worker", *argv, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_the_ui_config_file_has_one_flag_name_in_every_command(name, capsys):
    """`--config-file` names the UI's config file everywhere (`cascade run start --config` is a
    GPU config); `cascade tui` and `cascade up` still take `--config` as a hidden alias."""
    with pytest.raises(SystemExit):
        main([name, "--help"])
    text = capsys.readouterr().out
    uses_config_file = "CASCADE_CONFIG" in text
    if uses_config_file:
        assert "--config-file" in text, name
        assert "like `cascade tui --config`" not in text, name
    if name in ("tui", "up"):
        assert uses_config_file and "--config CONFIG" not in text, text


@pytest.mark.parametrize("flag", ["--config-file", "--config"])
def test_tui_save_config_writes_where_either_name_says(flag, tmp_path):
    target = tmp_path / "my.toml"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("CASCADE_CONFIG", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "tui",
            "--save-config",
            flag,
            str(target),
            "--url",
            "http://127.0.0.1:9",
            "--token",
            "t0ken",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert 'url = "http://127.0.0.1:9"' in target.read_text()
