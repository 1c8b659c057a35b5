"""The terminal UI guide's screenshots (docs/images/*.svg), made by the UI itself: a real server in
this process with the sample data (the sample run and the demo traces, uploaded through the
embedded S3 endpoint as `cascade serve` does), and the app driven by Textual's `run_test`, each
screen saved with `App.save_screenshot`.

    python -m docs.screenshots [--out docs/images] [--size 100x30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from aiohttp import web
from pydantic import SecretStr

from cascade_server.api.http_site import ApiRunner
from cascade_server.app import create_app
from cascade_server.serve import start_s3
from cascade_server.settings import Settings
from cascade_tui.app import CascadeApp
from cascade_tui.connection.config import TuiSettings
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen

OUT = Path(__file__).resolve().parent / "images"
TOKEN = "docs-screenshots-token"
DEMO_TRACE = "tinyformer-step-sm70"


def free_port(preferred: int = 0) -> int:
    """`preferred` when it is free (the title bar shows the URL: the default port reads best)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def until(condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def demo_trace_ready(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        deadline = time.monotonic() + 120
        while (await http.get(f"/api/traces/{DEMO_TRACE}")).json().get("state") != "ready":
            if time.monotonic() > deadline:
                raise TimeoutError(f"the demo trace {DEMO_TRACE} never got ready")
            await asyncio.sleep(0.2)


async def capture(out: Path, size: tuple[int, int], work: Path) -> list[Path]:
    settings = Settings(
        data_dir=work / "data",
        port=free_port(8000),
        s3_port=free_port(9020),
        token=TOKEN,
        launcher="manual",
        samples=True,
    )
    async with contextlib.AsyncExitStack() as stack:
        await start_s3(settings, stack)
        runner = ApiRunner(
            create_app(settings), handler_cancellation=True, access_log=None, shutdown_timeout=2
        )
        await runner.setup()
        stack.push_async_callback(runner.cleanup)
        await web.TCPSite(runner, "127.0.0.1", settings.port).start()
        await demo_trace_ready(settings.base_url)
        app = CascadeApp(
            TuiSettings(
                url=settings.base_url,
                token=SecretStr(TOKEN),
                refresh_hz=4.0,
                download_dir=work / "downloads",
                config=work / "no-config.toml",
            )
        )
        saved: list[Path] = []

        async def shot(name: str, screen: type, pilot) -> None:
            await until(lambda: isinstance(app.screen, screen), f"the {name} screen")
            await pilot.pause(1.0)  # let the tables fill and the live redraws settle
            saved.append(Path(app.save_screenshot(filename=f"{name}.svg", path=str(out))))

        async with app.run_test(size=size) as pilot:
            await shot("runs", RunsScreen, pilot)
            await pilot.press("enter")  # the sample run, with its kernels view
            await until(lambda: isinstance(app.screen, RunScreen), "the run screen")
            await pilot.press("k")
            await shot("run", RunScreen, pilot)
            await pilot.press("t")
            await shot("traces", TracesScreen, pilot)
            await pilot.press("slash", *DEMO_TRACE, "enter")  # filter to the demo trace, then New run on it
            await pilot.pause(0.5)
            await pilot.press("n")
            await shot("new-run", NewRunScreen, pilot)
        return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--size", default="100x30", help="columns x rows")
    args = parser.parse_args(argv)
    columns, rows = (int(n) for n in args.size.split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for path in asyncio.run(capture(args.out, (columns, rows), Path(work))):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
