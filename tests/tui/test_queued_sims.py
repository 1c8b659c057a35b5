"""A sim a scheduler still holds: the sims table's kernel column shows its job and Slurm's word."""

from __future__ import annotations

from cascade_tui.views import simrows

from .factories import T0, sim


def queued(**kw):
    values = dict(
        state="pending", started_at=None, last_heartbeat_at=None, kernels_done=0, current_kernel=None
    )
    return sim(**{**values, **kw})


def test_a_queued_sim_shows_its_job_and_slurms_state_and_reason():
    cells = simrows.sim_cells(queued(launcher_ref="41_3", launcher_state="PENDING (Resources)"), T0)
    assert cells["kernel"] == simrows.Cell("job 41_3 PENDING (Resources)", "queued")
    assert cells["state"].text.endswith("pending")
    started = simrows.sim_cells(
        queued(launcher_ref="41_3", launcher_state="RUNNING").model_copy(update={"state": "launching"}), T0
    )
    assert started["kernel"].text == "job 41_3 RUNNING"
    # submitted, but squeue not asked yet
    assert simrows.sim_cells(queued(launcher_ref="41_3"), T0)["kernel"].text == "job 41_3"


def test_local_pids_running_sims_and_errors_are_not_jobs():
    assert simrows.sim_cells(queued(launcher_ref="4242"), T0)["kernel"].text == ""  # a local worker's pid
    running = simrows.sim_cells(sim(launcher_ref="41_3", launcher_state="RUNNING"), T0)
    assert running["kernel"].text == "dot_kernel<double>"
    failed = simrows.sim_cells(
        queued(launcher_ref="41_3", state="failed", error="sbatch refused the job: Invalid account"), T0
    )
    assert failed["kernel"] == simrows.Cell("sbatch refused the job: Invalid account", "error")
