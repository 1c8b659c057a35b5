"""CI: the wheel is the whole product. Build it, install it into a fresh venv outside the checkout,
then from an empty temporary directory check `cascade --version` and that `cascade serve` has the
GPU configs, the two demo traces `ready` and the sample run, as from the checkout, and (with
`--web`) serves the agent prompt and the browser UI's page and scripts from the installed package.

Run: python3 .ci/wheel_smoke.py   (standard library only; uses .venv's pip to build the wheel)"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_TRACES = {"tinyformer-step-sm70", "tinyformer-step-sm75"}
TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*args: str | Path, **kwargs) -> None:
    subprocess.run([str(a) for a in args], check=True, **kwargs)


def get(url: str, token: str) -> object:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def wait_for(what: str, check, log: Path) -> object:
    deadline = time.monotonic() + TIMEOUT_S
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as exc:  # not listening yet
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    sys.exit(f"wheel smoke: {what} not within {TIMEOUT_S} s (last: {last!r})\n{log.read_text()}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cascade-wheel-") as tmp:
        tmp_dir = Path(tmp)
        run(REPO / ".venv" / "bin" / "pip", "wheel", "-q", "--no-deps", "-w", tmp_dir / "dist", REPO)
        wheel = next((tmp_dir / "dist").glob("cascade_sim-*.whl"))
        if not wheel.name.endswith("-py3-none-any.whl"):  # pure Python: one wheel for every platform
            sys.exit(f"wheel smoke: {wheel.name} is not a pure-Python (py3-none-any) wheel")
        venv = tmp_dir / "venv"
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "pip", "install", "-q", wheel)
        cascade = venv / "bin" / "cascade"

        workdir = tmp_dir / "elsewhere"  # nothing of the checkout is reachable from here
        workdir.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")}
        env.update(
            HOME=str(tmp_dir / "home"),
            XDG_DATA_HOME=str(tmp_dir / "home" / "data"),
            CASCADE_PORT=str(free_port()),
            CASCADE_S3_PORT=str(free_port()),
            CASCADE_SCAN_INTERVAL_S="0.5",
        )
        version = subprocess.run(
            [cascade, "--version"], cwd=workdir, env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        if not version.startswith("cascade 0") and not version.startswith("cascade 1"):
            sys.exit(f"wheel smoke: cascade --version printed {version!r}")

        log = tmp_dir / "serve.log"
        with open(log, "wb") as out:
            serve = subprocess.Popen(
                [cascade, "serve", "--web"], cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            token = str(
                wait_for(
                    "the token line",
                    lambda: next(
                        (
                            line.split(": ", 1)[1]
                            for line in log.read_text().splitlines()
                            if line.startswith("token: ")
                        ),
                        None,
                    ),
                    log,
                )
            )
            base = f"http://127.0.0.1:{env['CASCADE_PORT']}"
            configs = wait_for("GPU configs", lambda: get(f"{base}/api/gpu-configs", token), log)

            def demo_traces_ready() -> list[dict] | None:
                traces = [t for t in get(f"{base}/api/traces", token) if t["id"] in DEMO_TRACES]
                failed = [t for t in traces if t["state"] == "failed"]
                if failed:
                    sys.exit(f"wheel smoke: demo trace failed: {failed}\n{log.read_text()}")
                return traces if len(traces) == 2 and all(t["state"] == "ready" for t in traces) else None

            wait_for("the demo traces ready", demo_traces_ready, log)
            runs = wait_for(
                "the sample run",
                lambda: [
                    r for r in get(f"{base}/api/runs", token) if r["sample"] and r["state"] == "succeeded"
                ],
                log,
            )
            if f"This app's is `{base}`" not in get_text(f"{base}/agent-prompt.md"):
                sys.exit("wheel smoke: /agent-prompt.md lacks the app's URL")
            if 'name="token"' not in get_text(f"{base}/") or "xterm" not in get_text(
                f"{base}/web-ui/static/js/textual.js"
            ):
                sys.exit("wheel smoke: the browser UI's page or script is missing")
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
        print(
            f"wheel smoke: {wheel.name} from {workdir}: {version}, {len(configs)} GPU configs, "
            f"demo traces ready, sample run {runs[0]['id']}, agent prompt and browser UI served"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
