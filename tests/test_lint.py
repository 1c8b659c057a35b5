"""The code's own checks, run with the suite so the README's one test command covers them: ruff
(lint and import order), ruff format (layout; `ruff format .` applies it), mypy (types) and import-linter (the layering in DESIGN.md: the UI and the worker use only
the server's models and pure modules; pure modules do no I/O)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "--quiet", "."],
        ["ruff", "format", "--check", "--quiet", "."],
        # tests/tui joins once its helpers are typed (the terminal UI's half of issue 9).
        # Tens of seconds without its cache: the full run has it, the fast lane does not.
        pytest.param(
            ["mypy", "src", "benchmarks", "tests", "docs"],
            marks=pytest.mark.slow,
        ),
        ["lint-imports"],
    ],
    ids=["ruff", "ruff-format", "mypy", "import-linter"],
)
def test_check_passes(command: list[str]) -> None:
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=280
    )
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}{result.stderr}"
