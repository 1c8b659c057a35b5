"""What each package really loads (after harlequin's test_import_hygiene): the import contracts
(pyproject.toml, `lint-imports`) check the import graph as written; this imports each package's
entry points in a fresh interpreter and looks at `sys.modules`, so a lazy or indirect import that
drags in a heavy library is caught too. A sim host runs the worker, a laptop the UI: neither may
pay for what it does not use."""

from __future__ import annotations

import subprocess
import sys

import pytest

# (what is imported, what must not be loaded then)
CASES = [
    (
        ["cascade_worker.cli", "cascade_worker.sim_session", "cascade_worker.simulator.cli"],
        ["aiohttp", "aiosqlite", "textual", "boto3", "cascade_server", "cascade_tui"],
    ),
    (
        ["cascade_tui.app", "cascade_tui.cli", "cascade_tui.scripting.run_command"],
        ["aiosqlite", "aiohttp", "cascade_server", "cascade_worker"],
    ),
    (
        ["cascade_tui.cli", "cascade_tui.scripting.results_command", "cascade_tui.views.chart"],
        ["textual", "aiosqlite", "boto3"],
    ),
    (
        ["cascade_core", *(f"cascade_core.{m}" for m in ("models", "comparison", "log_notes", "variants"))],
        ["aiohttp", "aiosqlite", "httpx", "textual", "boto3"],
    ),
]


@pytest.mark.parametrize(("imported", "forbidden"), CASES, ids=["worker", "tui", "cli", "core"])
def test_importing_loads_nothing_it_must_not(imported: list[str], forbidden: list[str]) -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {imported!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({forbidden!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"{imported} loaded {out.stdout.strip()}"
