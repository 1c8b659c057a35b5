"""Issue 23 in the CLI's views: the shard column, the run header's shards line, the New run note."""

from __future__ import annotations

from datetime import timedelta

from cascade_core.models import RunEntry, ShardInfo
from cascade_tui.views.output import render_table
from cascade_tui.views.script_views import SIM_COLUMNS, run_header, sim_columns, sim_records
from cascade_tui.views.shard_text import shard_cell, shard_words, shards_note
from tests.server.test_shard_plan import DEMO
from tests.tui import factories

SHARDS = [
    ShardInfo(index=0, count=3, kernel_first=0, kernel_last=4, warmup_kernels=0),
    ShardInfo(index=1, count=3, kernel_first=5, kernel_last=9, warmup_kernels=1),
    ShardInfo(index=2, count=3, kernel_first=10, kernel_last=14, warmup_kernels=1),
]


def sharded_run():
    sims = [
        factories.sim(
            f"sim-00000000000{i}",
            shard=s,
            kernels_done=5 if i < 2 else 3,
            kernels_total=5,
            state="succeeded" if i < 2 else "running",
        )
        for i, s in enumerate(SHARDS)
    ]
    return factories.run(sims, entries=[RunEntry(gpu_config="SM86_RTX3070", count=1, shards=3)])


def test_shard_cells_and_words():
    assert [shard_cell(s) for s in SHARDS] == ["1/3 k1-5", "2/3 k6-10 +1w", "3/3 k11-15 +1w"]
    assert shard_cell(None) == ""
    assert shard_words(SHARDS[1]) == "shard 2 of 3: kernels 6-10, after 1 warm-up kernel"


def test_the_sims_table_has_a_shard_column_only_when_sharded():
    run = sharded_run()
    now = factories.T0 + timedelta(minutes=1)
    columns = sim_columns(run.sims)
    assert [c.key for c in columns][:3] == ["gpu_config", "replica", "shard"]
    table = render_table(columns, sim_records(run.sims, now))
    assert "2/3 k6-10 +1w" in table and "shard" in table.splitlines()[0]
    plain = factories.run([factories.sim()])
    assert sim_columns(plain.sims) == SIM_COLUMNS


def test_the_run_header_says_how_it_is_sharded_and_the_merged_progress():
    lines = run_header(sharded_run(), factories.T0 + timedelta(minutes=1))
    shards = next(line for line in lines if line.startswith("shards"))
    assert shards == (
        "shards   SM86_RTX3070: 3 shards, 1 warm-up kernel; merged: SM86_RTX3070 #0 13/15 active"
    )
    assert not any(
        line.startswith("shards") for line in run_header(factories.run([factories.sim()]), factories.T0)
    )


def test_the_new_run_note_gives_the_expected_speed_up_and_the_measured_error():
    note = shards_note(DEMO, 3, 1)
    assert note.startswith("3 shards: expected speed-up ×2.") and "1.99%" in note and "0.17%" in note
    assert "2 run at once here" in shards_note(DEMO, 3, 1, slots=2)
    assert shards_note(DEMO, 1, 1).startswith("1 shard")
    assert "cannot shard" in shards_note([5], 2, 1)


def test_the_reducer_swaps_a_shard_retried_in_place():
    from cascade_core.models import KernelStat, SimEvent, SnapshotEvent
    from cascade_tui.views.reducer import RunModel

    run = sharded_run()
    failed = run.sims[2].model_copy(update={"state": "failed"})
    model = RunModel()
    model.apply(
        SnapshotEvent(
            run=run.model_copy(update={"sims": [*run.sims[:2], failed]}),
            kernels=[KernelStat(sim_id=failed.id, kernel_index=10, kernel_name="k", sim_time_ns=1.0)],
        )
    )
    model.take_changes()
    again = failed.model_copy(
        update={"id": "sim-new", "state": "pending", "retry_of": failed.id, "kernels_done": 0}
    )
    model.apply(SimEvent(sim=again))
    assert failed.id not in model.sims and "sim-new" in model.sims and failed.id not in model.kernels
    assert model.state() == "active" and model.take_changes().kernels
