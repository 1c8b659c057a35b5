"""The docs: the site builds with `mkdocs build --strict` (every page in the nav, every link and
anchor found), the generated reference pages are current, every setting has a description, the
README's links lead somewhere, and every shell block a guide marks runnable runs as written
against a real `cascade serve`."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from docs import gen_cli, gen_configuration, gen_reference
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
RUNNABLE = re.compile(r"^<!-- runnable\b[^>]*-->\n```bash\n(.*?)^```$", flags=re.S | re.M)
TOKEN = "docs-test-token-0123456789"


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (pip install -e '.[test]' installs it)",
)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_setting_has_a_description_and_a_machine_independent_default() -> None:
    assert gen_configuration.problems() == []


@pytest.mark.parametrize(
    "page", [gen_configuration.PAGE, gen_reference.INDEX, gen_reference.API], ids=lambda p: p.name
)
def test_generated_page_is_current(page: Path) -> None:
    assert page.read_text() == gen_reference.PAGES[page](), (
        f"{page.relative_to(ROOT)} is stale: run python -m docs.gen_reference"
    )


def test_cli_reference_documents_every_subcommand() -> None:
    page = gen_cli.PAGE.read_text()
    missing = [name for name in gen_cli.subcommands() if f"\n## `cascade {name}`\n" not in page]
    assert missing == [], f"{missing} missing from docs/reference/cli.md: run python -m docs.gen_reference"


@pytest.mark.slow  # one `--help` subprocess per command: about half a minute on two cores
def test_cli_reference_is_current() -> None:
    assert gen_cli.PAGE.read_text() == gen_cli.render(), (
        "docs/reference/cli.md is stale: run python -m docs.gen_reference"
    )


def test_the_readme_is_a_front_page_whose_links_all_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 150
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local and [t for t in local if not (ROOT / t).exists()] == []


def test_runnable_blocks_are_found() -> None:
    assert runnable_blocks(), "no shell block in docs/ is marked <!-- runnable -->"


def runnable_blocks() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(DOCS)}:{text[: match.start()].count(chr(10)) + 1}", match.group(1))
        for page in sorted(DOCS.rglob("*.md"))
        for text in [page.read_text()]
        for match in RUNNABLE.finditer(text)
    ]


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`cascade serve` as a subprocess on free ports with a fresh data directory, once the demo
    trace the guides use is ready; its stand-in sims replay 50 times faster than recorded."""
    data = tmp_path_factory.mktemp("data")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")},
        "CASCADE_DATA_DIR": str(data),
        "CASCADE_PORT": str(port),
        "CASCADE_S3_PORT": str(free_port()),
        "CASCADE_TOKEN": TOKEN,
        "CASCADE_REPLAY_SPEED": "50",
        "CASCADE_LOCAL_SLOTS": "2",
    }
    log = (data.parent / "serve.log").open("wb")
    # The umbrella command as pip would install it from this checkout, wherever its module lives now.
    command = [sys.executable, "-m", gen_cli.umbrella_module(), "serve"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not demo_trace_ready(url):
            assert proc.poll() is None, f"cascade serve exited {proc.returncode}"
            assert time.monotonic() < deadline, "the demo trace was not ready within 120 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def demo_trace_ready(url: str) -> bool:
    try:
        resp = httpx.get(
            f"{url}/api/traces/tinyformer-step-sm70", headers={"Authorization": f"Bearer {TOKEN}"}
        )
    except (OSError, httpx.TransportError):
        return False
    return resp.status_code == 200 and resp.json()["state"] == "ready"


@pytest.mark.e2e
@pytest.mark.timeout(300)
@pytest.mark.parametrize("where, block", runnable_blocks(), ids=[w for w, _ in runnable_blocks()])
def test_runnable_block_runs_as_written(where: str, block: str, serve: str, tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "CASCADE_URL": serve,
        "CASCADE_TOKEN": TOKEN,
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, f"{where} exited {result.returncode}:\n{result.stderr}{result.stdout}"
    # A block may go on past a run that failed, saying so (`|| echo "run $RUN did not succeed"`).
    assert not re.search(r"^run \S* did not succeed$", result.stdout, flags=re.M), result.stderr


@pytest.mark.slow  # a server with the sample data and the embedded S3 endpoint, and four screens
@pytest.mark.timeout(240)
def test_the_screenshot_script_saves_every_screen_of_the_guide(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "docs.screenshots", "--out", str(tmp_path)],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")},
        capture_output=True,
        text=True,
        timeout=220,
    )
    assert result.returncode == 0, result.stderr
    guide = (DOCS / "guides" / "terminal-ui.md").read_text()
    shown = sorted(re.findall(r"\(\.\./images/([\w-]+\.svg)\)", guide))
    assert shown and sorted(p.name for p in tmp_path.glob("*.svg")) == shown
    assert all((DOCS / "images" / name).exists() for name in shown)


def test_the_api_references_limits_are_the_codes() -> None:
    """Issue 32: the docs list each limit a user can meet with its default; these are the code's."""
    from cascade_core.accuracy import ERROR_PCT_BOUND
    from cascade_core.bounded_read import TIMING_FILE_MAX_BYTES, MiB
    from cascade_core.models.runs import MAX_ENTRY_COUNT, MAX_RUN_ENTRIES, MAX_RUN_SIMS
    from cascade_core.real_timing import MAX_REAL_DURATION_NS, MIN_REAL_DURATION_NS
    from cascade_core.shard_plan import MAX_SHARDS, MAX_WARMUP_KERNELS, MIN_SPEEDUP
    from cascade_core.timeline.stored import MAX_ERROR_PCT, MAX_STEP_NS
    from cascade_server.events import SUBSCRIBER_QUEUE_LIMIT
    from cascade_server.ingest.chunk_order import MAX_AHEAD
    from cascade_server.ingest.gaps import GAP_WAIT_S
    from cascade_server.settings import Settings

    limits = (DOCS / "reference" / "api.md").read_text().split("## Limits", 1)[1].split("\n## ", 1)[0]
    defaults = Settings.model_fields
    for text in (
        f"`CASCADE_MAX_JSON_BYTES`, {defaults['max_json_bytes'].default // MiB} MiB",
        f"`CASCADE_BODY_TIMEOUT_S`, {defaults['body_timeout_s'].default:g} s",
        f"`CASCADE_MAX_FILE_BYTES`, {defaults['max_file_bytes'].default // MiB} MiB",
        f"`CASCADE_MAX_SIM_FILES_BYTES`, {defaults['max_sim_files_bytes'].default // MiB} MiB",
        f"`CASCADE_HEARTBEAT_TIMEOUT_S`, {defaults['heartbeat_timeout_s'].default:g} s",
        f"`CASCADE_SSE_MAX_BUFFER_BYTES` ({defaults['sse_max_buffer_bytes'].default // MiB} MiB)",
        f"`CASCADE_SSE_SEND_TIMEOUT_S`, {defaults['sse_send_timeout_s'].default:g} s",
        f"`CASCADE_POSTPROCESS_TIMEOUT_S` ({defaults['postprocess_timeout_s'].default:,.0f} s)",
        f"{MAX_RUN_ENTRIES} entries; `count` 1 to {MAX_ENTRY_COUNT}; `shards` 1 to {MAX_SHARDS}",
        f"`warmup_kernels` 0 to {MAX_WARMUP_KERNELS:,}; {MAX_RUN_SIMS:,} sims in all",
        f"at most 1/{MIN_SPEEDUP:g} of the trace's expected cost",
        f"at most {MAX_AHEAD - 1} past the chunk",
        f"filled within {GAP_WAIT_S:g} s",
        f"at most {SUBSCRIBER_QUEUE_LIMIT:,} events",
        f"{TIMING_FILE_MAX_BYTES // MiB} MiB, read within",
        f"`duration_ns` from {MIN_REAL_DURATION_NS:g} ns to a day",
        f"within ±{ERROR_PCT_BOUND:,.0f}%",
        f"an error within ±{MAX_ERROR_PCT:,.0f}%",
    ):
        assert text in limits, text
    assert MAX_REAL_DURATION_NS == MAX_STEP_NS == 86_400e9  # "a day"
