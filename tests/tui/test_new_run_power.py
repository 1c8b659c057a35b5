"""Issue 34 in the terminal UI, on a real server whose SM7_QV100 has an AccelWattch power model and
SM7_TITANV none: New run's `w` turns power on saying what it costs (in the help and the command
palette too), names a picked config without a model as it is turned on, and the run is created
with power on the config that has one; a power sim's kernels then show their power and the
config its energy in the kernels view, live, as the `kernel_power` events come."""

from __future__ import annotations

import json

import pytest

from cascade_core import log_notes
from cascade_core.models import GpuConfig, RunEntry, SimulatorInfo
from cascade_core.power_report import MODEL_FILE
from cascade_tui.screens.run import RunScreen
from cascade_tui.views import chart, power_choice
from cascade_tui.views.power import joules
from cascade_tui.views.simulator import simulator_line

from .conftest import TRACE, open_new_run, open_run_screen, play, serve, tinyformer
from .helpers import (
    record_notifications,
    recorded_log,
    screen_text,
    wait_for_app,
    wait_for_flat_text,
    wait_for_text,
)

TESTED_CFGS = "gpu-simulator/gpgpu-sim/configs/tested-cfgs"
COST_LINE = "Power: on (w)  AccelWattch per kernel, about 2-3x the simulation time"
QV, TV = "SM7_QV100", "SM7_TITANV"


# --- pure: the form's choice --------------------------------------------------------------------

CONFIGS = [
    GpuConfig(name=QV, arch="sm_70", core_clock_mhz=1132, power_model=True),
    GpuConfig(name=TV, arch="sm_70", core_clock_mhz=1200),
]


def test_the_power_line_says_what_it_costs_within_80_columns():
    assert power_choice.power_lines(False, [QV], CONFIGS) == [
        "Power: off  (w: AccelWattch per kernel, about 2-3x the simulation time)"
    ]
    on = power_choice.power_lines(True, [QV], CONFIGS)
    assert on == ["Power: on (w)  AccelWattch per kernel, about 2-3x the simulation time"]
    assert all(len(line) <= 78 for line in on)  # the screen pads one cell each side
    assert (
        power_choice.power_lines(True, [QV, TV, TV], CONFIGS)[1] == "  without power (no model): SM7_TITANV"
    )
    assert "no picked config has a power model" in power_choice.power_lines(True, [TV], CONFIGS)[1]


def test_turning_power_on_names_the_picked_configs_without_a_model_and_power_goes_to_the_others():
    assert power_choice.toggle_notice([QV], CONFIGS) is None
    assert power_choice.toggle_notice([QV, TV], CONFIGS) == (
        "SM7_TITANV has no AccelWattch power model: it runs without power. Configs with one: SM7_QV100."
    )
    entries = power_choice.with_power(
        [RunEntry(gpu_config=QV, count=1), RunEntry(gpu_config=TV, count=2)], CONFIGS
    )
    assert [e.model_dump() for e in entries] == [
        {"gpu_config": QV, "count": 1, "power": True},
        {"gpu_config": TV, "count": 2},
    ]


def test_with_the_stand_in_the_simulator_line_says_a_power_run_would_be_refused():
    stand_in = SimulatorInfo(kind="stand-in")
    assert simulator_line(stand_in, power=True).startswith("⚠ Power needs the real Accel-Sim")
    assert "would be refused" in simulator_line(stand_in, power=True)
    assert simulator_line(stand_in).startswith("Simulator: the stand-in")
    assert "Power" not in simulator_line(SimulatorInfo(kind="installed", configs=4), power=True)


# --- on a real server -----------------------------------------------------------------------------


@pytest.fixture
async def srv(make_server, accelsim_dir):
    """The tinyformer trace; SM7_QV100 with a power model beside its gpgpusim.config."""
    (accelsim_dir / TESTED_CFGS / QV / MODEL_FILE).write_text("<accelwattch/>\n")
    return await serve(make_server, [tinyformer()], accelsim_dir=accelsim_dir)


async def test_the_server_says_which_configs_have_a_power_model(http):
    configs = {c["name"]: c.get("power_model") for c in (await http.get("/api/gpu-configs")).json()}
    assert configs["SM7_QV100"] is True and configs["SM7_TITANV"] is False


@pytest.mark.slow
async def test_w_turns_power_on_with_its_cost_naming_configs_without_a_model_and_the_run_has_power(app, http):
    async with app.run_test(size=(80, 24)) as pilot:
        await open_new_run(pilot)
        text = screen_text(app)
        assert "Power: off  (w: AccelWattch per kernel, about 2-3x the simulation time)" in text
        assert "w: power" in text  # the keys above the list

        await pilot.press("w")  # the suggested SM7_QV100 has a model: nothing to warn of
        await wait_for_text(pilot, COST_LINE)
        await pilot.press("w")
        await wait_for_text(pilot, "Power: off")

        notes = record_notifications(app)
        await pilot.press("down", "space")  # SM7_TITANV picked too
        await wait_for_text(pilot, "[x] SM7_TITANV")
        await pilot.press("w")
        await wait_for_app(pilot, lambda: notes(), "the notice")
        assert notes() == [
            "SM7_TITANV has no AccelWattch power model: it runs without power. Configs with one: SM7_QV100."
        ]
        text = await wait_for_text(pilot, COST_LINE)
        assert "  without power (no model): SM7_TITANV" in text
        assert all(len(line) <= 80 for line in text.splitlines())

        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen) or len(notes()) > 1, "the launch")
        assert [n for n in notes()[1:] if not n.startswith("Launched")] == [], notes()
        assert app.errors == []

    [run] = (await http.get("/api/runs")).json()
    detail = (await http.get(f"/api/runs/{run['id']}")).json()
    assert detail["entries"] == [
        {"gpu_config": "SM7_QV100", "count": 1, "power": True},
        {"gpu_config": "SM7_TITANV", "count": 1},
    ]
    assert {s["gpu_config"]: s.get("power", False) for s in detail["sims"]} == {
        "SM7_QV100": True,
        "SM7_TITANV": False,
    }


@pytest.mark.slow
async def test_the_power_key_is_in_the_help_and_the_command_palette(app):
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_new_run(pilot)
        commands = {c.help: c.title for c in app.get_system_commands(screen)}
        assert commands["key w  (new_run.power)"].startswith(
            "Power: simulate each kernel's power with AccelWattch"
        )
        await pilot.press("question_mark")
        text = await wait_for_flat_text(pilot, "new_run.power")
        # the description wraps around the id in its column
        assert (
            "w Power: simulate each kernel's power with" in text
            and "(about 2-3x the simulation time)" in text
        )


def power_note(index: int) -> str:
    """The line the worker writes into a power sim's log once the kernel's stats are there."""
    return log_notes.power_line(
        log_notes.KernelPowerNote(index, 57.3, 67.3, 52.3, (("DRAMP", 12.5), ("CONSTP", 44.8)))
    )


@pytest.mark.slow
async def test_a_power_sims_kernels_show_their_power_and_its_energy_live(app, http, tmp_path):
    resp = await http.post(
        "/api/runs",
        json={"trace_id": TRACE, "entries": [{"gpu_config": "SM7_QV100", "count": 1, "power": True}]},
    )
    assert resp.status_code == 201, resp.text
    run = resp.json()
    log = recorded_log("SM7_QV100")
    kernels = sum(1 for line in log if line.startswith("kernel_name = "))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await pilot.press("k")
        # The stats first (the kernels finish), then their power, as the worker writes them.
        sim = await play(http, run["sims"][0]["id"], log, end=None)
        await wait_for_app(pilot, lambda: len(screen.model.all_kernels()) == kernels, "the kernels")
        positions = sorted(k.kernel_index for k in screen.model.all_kernels())
        await sim.log([power_note(i) for i in positions[:-1]])  # the last one: none
        await sim.beat("succeeded", exit_code=0)
        await wait_for_app(
            pilot, lambda: "avg 57.3 W" in chart.plain(screen.kernels_pane.chart.lines), "the energy"
        )
        text = chart.plain(screen.kernels_pane.chart.lines)
        stats = screen.model.all_kernels()
        energy = sum(k.energy_j or 0.0 for k in stats)
        with_power = [k for k in stats if k.kernel_index != positions[-1]]
        assert energy == pytest.approx(sum(57.3 * (k.sim_time_ns or 0.0) * 1e-9 for k in with_power))
        said = f"SM7_QV100 energy {joules(energy)} avg 57.3 W 1 kernel without power"
        assert said in " ".join(text.split()), text
        bars = [line for line in text.splitlines() if line.startswith("  SM7_QV100 ") and "µs" in line]
        assert bars[1].endswith("57.3 W") and bars[-1].endswith("—"), text  # bars[0]: the total
        assert "57.3 W" in screen_text(app)  # at 80x24, the first kernels' on screen

        # The results JSON `d` saves is the API's: each kernel's power whole, and its energy.
        await pilot.press("d")
        saved = tmp_path / "downloads" / f"{run['id']}-results.json"
        await wait_for_app(pilot, saved.exists, "the results download")
        [kernels_saved] = [s["kernels"] for s in json.loads(saved.read_text())["sims"]]
        first = next(k for k in kernels_saved if k["kernel_index"] == positions[0])
        assert first["power"] == {
            "avg_w": 57.3,
            "max_w": 67.3,
            "min_w": 52.3,
            "components": {"DRAMP": 12.5, "CONSTP": 44.8},
        }
        assert first["energy_j"] == pytest.approx(57.3 * first["sim_time_ns"] * 1e-9)
        last = next(k for k in kernels_saved if k["kernel_index"] == positions[-1])
        assert "power" not in last and "energy_j" not in last
        assert app.errors == []
