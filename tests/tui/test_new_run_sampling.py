"""Issue 33 in the New run form: `m` picks the sampling method, the form says what it would save
before the launch, and the run is created sampled."""

from __future__ import annotations

import pytest

from cascade_core.models import SamplingInfo
from cascade_tui.screens.run import RunScreen

from .conftest import TRACE, open_new_run, tinyformer
from .helpers import record_notifications, screen_text, wait_for_app, wait_for_flat_text

FIGURES = [
    SamplingInfo(
        method="identical",
        kernels=15,
        kernels_simulated=12,
        instructions=3000,
        instructions_simulated=2000,
        error_pct=0,
    ),
    SamplingInfo(
        method="stratified",
        kernels=15,
        kernels_simulated=5,
        instructions=3000,
        instructions_simulated=600,
        error_pct=0.8,
    ),
]


@pytest.fixture
def srv_traces():
    return [tinyformer(sampling=FIGURES)]


@pytest.mark.slow
async def test_m_cycles_the_sampling_method_saying_what_it_saves_and_the_run_is_sampled(srv, app, http):
    # The run's plan is made from the trace's kernel list (the figures above are the form's only).
    traces = srv.settings.traces_dir / TRACE / "traces"
    traces.mkdir(parents=True)
    for n in range(1, 16):
        (traces / f"kernel-{n}.traceg").write_text(f"-kernel name = _Z6kernel{n % 3}v\n")
    (traces / "kernelslist.g").write_text("".join(f"kernel-{n}.traceg\n" for n in range(1, 16)))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_new_run(pilot)
        assert "Sampling: none" in screen_text(app)
        await pilot.press("m")
        text = await wait_for_flat_text(pilot, "Sampling: identical")
        assert "12 of 15 kernels simulated, 33.3% fewer warp instructions" in text, text
        await pilot.press("m")
        text = await wait_for_flat_text(pilot, "Sampling: stratified")
        assert "5 of 15 kernels simulated, 5.0x fewer" in text and "±0.8%" in text, text
        await pilot.press("m", "m")  # round to none, then identical again
        await wait_for_flat_text(pilot, "Sampling: identical")
        notes = record_notifications(app)
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen) or len(notes()) > 1, "the launch")
        assert [n for n in notes() if not n.startswith("Launched")] == []

    runs = (await http.get("/api/runs")).json()
    assert runs and runs[0]["entries"][0]["sampling"] == "identical", runs
