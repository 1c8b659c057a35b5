"""The slurm launcher's pure part: what it sends to sbatch and how it reads squeue and sacct."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cascade_server.launchers.slurm_jobs import (
    ArrayJob,
    JobState,
    SlurmError,
    adoptable_tasks,
    array_job_id,
    batch_script,
    failure_reason,
    job_name,
    parse_exit_code,
    parse_exit_file,
    parse_sacct,
    parse_sbatch_output,
    parse_squeue,
    sbatch_argv,
    slurm_message,
)
from cascade_server.settings import Settings

JOB = ArrayJob(run_id="run-1", gpu_config="SM7_QV100", sim_ids=("sim-a", "sim-b", "sim-c"))


def test_sbatch_argv_names_the_entry_and_exports_names_only(tmp_path):
    argv = sbatch_argv(
        JOB,
        ["CASCADE_TOKEN", "CASCADE_URL"],
        Path("/out"),
        partition="gpu",
        account="lab",
        time_limit="4:00:00",
        extra=["--mem=8G"],
    )
    assert argv[:2] == ["sbatch", "--parsable"]
    assert "--job-name=cascade.run-1.SM7_QV100" in argv and job_name(JOB) == "cascade.run-1.SM7_QV100"
    assert "--array=0-2" in argv
    assert "--output=/out/%A_%a.out" in argv and "--error=/out/%A_%a.err" in argv
    assert "--export=NONE,CASCADE_TOKEN,CASCADE_URL" in argv
    assert argv[-4:] == ["--partition=gpu", "--account=lab", "--time=4:00:00", "--mem=8G"]


def test_batch_script_picks_the_tasks_sim_and_records_the_exit_status(tmp_path):
    script = batch_script(JOB, [str(Path("/bin/sh")), "-c", 'echo "$CASCADE_SIM_ID"; exit 3'], tmp_path)
    for task, sim in enumerate(JOB.sim_ids):
        done = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            env={"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_JOB_ID": "42"},
        )
        assert (done.returncode, done.stdout.strip()) == (3, sim)
        assert (tmp_path / f"42_{task}.exit").read_text().strip() == "3"


def test_parse_sbatch_output_and_errors():
    assert parse_sbatch_output("1234\n") == "1234"
    assert parse_sbatch_output("1234;cluster\n") == "1234"
    with pytest.raises(SlurmError):
        parse_sbatch_output("Submitted batch job\n")
    message = slurm_message(
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n", "sbatch"
    )
    assert message == "Batch job submission failed: Invalid partition name specified"
    assert slurm_message("", "scancel") == "scancel failed without a message"


def test_parse_squeue_one_line_per_task():
    jobs = parse_squeue("12_0|RUNNING|None\n12_1|PENDING|Resources\n12_2|PENDING|(Priority)\ngarbage\n")
    assert set(jobs) == {"12_0", "12_1", "12_2"}
    assert jobs["12_0"].label() == "RUNNING" and jobs["12_0"].started and not jobs["12_0"].final
    assert jobs["12_1"].label() == "PENDING (Resources)" and not jobs["12_1"].started
    assert jobs["12_2"].label() == "PENDING (Priority)"
    assert JobState("1_0", "COMPLETING").started and not JobState("1_0", "COMPLETING").final
    assert JobState("1_0", "TIMEOUT").final


def test_parse_sacct_states_and_exit_codes():
    jobs = parse_sacct("7_0|CANCELLED by 0|0:15\n7_1|TIMEOUT|0:0\n7_2|FAILED|3:0\n7|RUNNING|0:0\n")
    assert jobs["7_0"] == JobState("7_0", "CANCELLED", exit_code=143)
    assert jobs["7_1"].state == "TIMEOUT" and jobs["7_2"].exit_code == 3
    assert parse_exit_code("nonsense") is None
    assert parse_exit_file("137\n") == 137 and parse_exit_file("") is None


def test_array_job_id():
    assert array_job_id("12_3") == "12" and array_job_id("12") == "12"
    assert array_job_id("4711") == "4711" and array_job_id("pid-1") is None


def test_failure_reason_says_what_slurm_says():
    assert failure_reason("7_1", JobState("7_1", "TIMEOUT"), 143) == (
        "Slurm job 7_1 TIMEOUT; the worker exited with status 143 without a final report"
    )
    assert failure_reason("7_1", JobState("7_1", "NODE_FAIL"), None) == (
        "Slurm job 7_1 NODE_FAIL; the worker sent no final report"
    )
    assert failure_reason("7_1", JobState("7_1", "RUNNING"), None) == (
        "Slurm job 7_1 left the queue (last seen RUNNING); the worker sent no final report"
    )
    assert (
        failure_reason("7_1", None, None)
        == "Slurm job 7_1 is no longer known to Slurm; the worker sent no final report"
    )


def test_the_slurm_launcher_refuses_a_loopback_url_unless_the_cluster_is_this_host(tmp_path):
    base = dict(data_dir=tmp_path, launcher="slurm")
    assert "CASCADE_PUBLIC_URL" in (Settings(**base).launcher_problem() or "")
    assert "CASCADE_PUBLIC_URL" in (
        Settings(**base, public_url="http://localhost:8000").launcher_problem() or ""
    )
    assert Settings(**base, slurm_local=True).launcher_problem() is None
    assert Settings(**base, public_url="http://head-node:8000").launcher_problem() is None
    assert "split" in (Settings(**base, slurm_local=True, slurm_args="--qos='x").launcher_problem() or "")
    assert Settings(data_dir=tmp_path).launcher_problem() is None  # local: nothing to check
    worker = Settings(data_dir=tmp_path, worker_command="/opt/cascade/bin/cascade worker").worker_argv()
    assert worker == ["/opt/cascade/bin/cascade", "worker"]


def test_cascade_serve_refuses_the_slurm_launcher_on_a_loopback_url(tmp_path):
    import os
    import sys

    env = {**os.environ, "CASCADE_LAUNCHER": "slurm", "CASCADE_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cascade serve: the slurm launcher needs CASCADE_PUBLIC_URL" in done.stderr
    assert "CASCADE_SLURM_LOCAL=1" in done.stderr


def test_jobs_submitted_before_a_restart_are_found_by_name_and_replica():
    job = ArrayJob(run_id="run-1", gpu_config="SM7_QV100", sim_ids=("sim-c", "sim-f"), replicas=(2, 5))
    assert "--comment=replicas:2,5" in sbatch_argv(job, [], Path("/out"))
    out = (
        "9_0|cascade.run-1.SM7_QV100|replicas:2,5\n9_1|cascade.run-1.SM7_QV100|replicas:2,5\n"
        "10_0|someone-else|\n11_7|cascade.run-1.SM7_QV100|replicas:1\n12|cascade.run-2.X|replicas:0\n"
    )
    assert adoptable_tasks(out) == {("run-1", "SM7_QV100", 2): "9_0", ("run-1", "SM7_QV100", 5): "9_1"}
