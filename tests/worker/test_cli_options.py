import os
from pathlib import Path
from unittest import mock

import pytest

from cascade_worker import accelsim
from cascade_worker.cli import UsageError, build_parser, main, resolve_options, simulation_for

ENV = {
    "CASCADE_URL": "http://127.0.0.1:9",
    "CASCADE_TOKEN": "t0k",
    "CASCADE_SIM_ID": "sim-000000000001",
    "CASCADE_GPU_CONFIG": "SM7_QV100",
    "CASCADE_TRACE_DIR": "/traces/x",
    "CASCADE_REPLAY_SPEED": "20",
}


def options(argv, env=ENV):
    with mock.patch.dict(os.environ, env, clear=True):
        return resolve_options(build_parser().parse_args(argv))


def test_environment_is_read():
    opts = options([])
    assert (opts.url, opts.token, opts.sim_id, opts.gpu_config) == (
        "http://127.0.0.1:9",
        "t0k",
        "sim-000000000001",
        "SM7_QV100",
    )
    assert opts.trace_dir == Path("/traces/x") and opts.speed == 20.0 and opts.accelsim_dir is None


def test_flags_override_the_environment():
    opts = options(["--sim-id", "sim-2", "--url", "https://h", "--speed", "3", "--gpu-config", "SM90_H100"])
    assert (opts.sim_id, opts.url, opts.speed, opts.gpu_config) == ("sim-2", "https://h", 3.0, "SM90_H100")


def test_missing_and_bad_values_are_usage_errors():
    with pytest.raises(UsageError, match="--url/CASCADE_URL and --sim-id/CASCADE_SIM_ID"):
        options([], {})
    with pytest.raises(UsageError, match="http://"):
        options(["--url", "ftp://x"])
    with pytest.raises(UsageError, match="CASCADE_REPLAY_SPEED"):
        options([], {**ENV, "CASCADE_REPLAY_SPEED": "fast"})
    with pytest.raises(UsageError, match="--speed/CASCADE_REPLAY_SPEED: Input should be greater than 0"):
        options(["--speed", "0"])
    with pytest.raises(UsageError, match="CASCADE_HEARTBEAT_INTERVAL_S"):
        options([], {**ENV, "CASCADE_HEARTBEAT_INTERVAL_S": "-1"})


def test_empty_variables_count_as_unset():
    opts = options([], {**ENV, "CASCADE_TOKEN": "", "CASCADE_GPU_CONFIG": "", "CASCADE_REPLAY_SPEED": ""})
    assert (opts.token, opts.gpu_config, opts.speed) == (None, None, 1.0)


def test_main_reports_a_usage_error_without_a_traceback(capsys, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "missing --url/CASCADE_URL" in err and "Traceback" not in err


def test_stand_in_when_accelsim_is_not_installed(tmp_path):
    argv = simulation_for(options([]), tmp_path).argv()
    assert argv[1:3] == ["-m", "cascade_worker.replay"] and argv[3].endswith("SM7_QV100.log.gz")


def make_install(root: Path, config: str, *, trace_config: bool) -> Path:
    (root / accelsim.BINARY).parent.mkdir(parents=True)
    (root / accelsim.BINARY).write_text("#!/bin/sh\n")
    cfg = root / accelsim.TESTED_CFGS / config
    cfg.mkdir(parents=True)
    (cfg / "gpgpusim.config").write_text("-gpgpu_clock_domains 1:1:1:1\n")
    (cfg / "config_x_islip.icnt").write_text("icnt\n")
    if trace_config:
        (root / accelsim.TRACE_CFGS / config).mkdir(parents=True)
        (root / accelsim.TRACE_CFGS / config / "trace.config").write_text("-t 1\n")
    return root


def test_real_mode_copies_the_config_and_builds_the_command(tmp_path):
    install = make_install(tmp_path / "accel-sim", "SM7_QV100", trace_config=True)
    trace = tmp_path / "trace"
    (trace / "traces").mkdir(parents=True)
    (trace / "traces" / "kernelslist.g").write_text("kernel-1.traceg\n")
    run_dir = tmp_path / "run"
    opts = options(["--accelsim-dir", str(install), "--trace-dir", str(trace)])
    argv = simulation_for(opts, run_dir).argv()
    own_list = tmp_path / "kernel-list" / "kernelslist.g"  # the sim's own, beside the run directory
    assert own_list.read_text() == "kernel-1.traceg\n"
    assert argv == [
        str(install / accelsim.BINARY),
        "-trace",
        str(own_list),
        "-config",
        "./gpgpusim.config",
        "-config",
        "./trace.config",
    ]
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "config_x_islip.icnt",
        "gpgpusim.config",
        "trace.config",
    ]


def test_real_mode_errors_are_short_reasons(tmp_path):
    install = make_install(tmp_path / "accel-sim", "SM2_GTX480", trace_config=False)
    with pytest.raises(accelsim.SetupError, match="no GPU config SM7_QV100"):
        simulation_for(options(["--accelsim-dir", str(install)]), tmp_path / "run")
    with pytest.raises(accelsim.SetupError, match="traces/kernelslist.g"):
        simulation_for(
            options(
                ["--accelsim-dir", str(install), "--gpu-config", "SM2_GTX480", "--trace-dir", str(tmp_path)]
            ),
            tmp_path / "run",
        )


def test_the_worker_stays_light():
    """A sim host needs httpx and pydantic only: no server, database, S3 or UI modules."""
    import subprocess
    import sys

    code = (
        "import sys, cascade_worker.cli, cascade_worker.sim_session; "
        "print(sorted(m for m in ('aiohttp', 'aiosqlite', 'boto3', 'textual', 'cascade_server.storage', "
        "'cascade_server.app') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
