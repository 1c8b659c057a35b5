"""Issue 31 in the terminal UI: a trace whose arch the installed simulator has no opcodes for (an
H100's sm_90 on the pinned Accel-Sim) says so on the Traces screen and in New run, naming the GPUs
and what to do; an A100 trace with one sm_80 config gets it picked, so `n` then Enter runs it."""

from __future__ import annotations

from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from tests.conftest import ready_trace, write_config
from tests.tui.conftest import make_app, on_list, select, serve
from tests.tui.helpers import screen_text, wait_for_text
from tests.worker.fakes import install_fake_accelsim, write_opcode_headers

A100 = "-gpgpu_compute_capability_major 8\n-gpgpu_compute_capability_minor 0\n-gpgpu_clock_domains 1410:1410:1512:6048\n"


async def test_an_h100_trace_says_why_it_cannot_run_and_an_a100_trace_gets_its_config(make_server, tmp_path):
    simulator = install_fake_accelsim(tmp_path / "accelsim", {"SM7_QV100": {}})
    write_opcode_headers(simulator, {"volta": 70, "ampere": 80})
    write_config(simulator, "SM80_A100", A100)
    traces = [
        ready_trace("h100-trace", arch="sm_90", kernels=1),
        ready_trace("a100-trace", arch="sm_80", kernels=8),
    ]
    server = await serve(make_server, traces, accelsim_dir=simulator)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        screen = await select(pilot, TracesScreen, "h100-trace", ["h100-trace", "a100-trace"])
        text = await wait_for_text(pilot, "sm_90: this Accel-Sim cannot simulate it")
        detail = screen.detail_text(screen.selected())
        assert detail.startswith("[b yellow]sm_90 (Hopper: H100, H200, GH200), which the installed Accel-Sim")
        assert "cascade simulator install --framework PATH --gpgpu-sim PATH" in detail
        assert "it knows sm_70, sm_80" in detail, text
        await pilot.press("n")
        text = await wait_for_text(pilot, "which the installed Accel-Sim")
        assert isinstance(app.screen, NewRunScreen) and "No GPU config has arch" not in text

        await pilot.press("escape")
        screen = await on_list(pilot, TracesScreen, ["a100-trace"])
        await select(pilot, TracesScreen, "a100-trace")
        await pilot.press("n")
        text = await wait_for_text(pilot, "[x] SM80_A100")
        assert "cannot simulate" not in screen_text(app)
