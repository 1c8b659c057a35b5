"""`cascade up`: the one-command quick start.

Uses the server already answering at CASCADE_URL (else where CASCADE_HOST and CASCADE_PORT say
`cascade serve` listens; default http://127.0.0.1:8000), or starts `cascade serve` there with its embedded defaults in the background, waits for /api/health, reads
the token it printed, opens the UI, and stops the server it started when the UI quits.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.setting_errors import data_dir_problem

from .connection.config import DEFAULT_URL, ConfigError
from .connection.local_server import (
    browser_url,
    default_data_dir,
    forget_url,
    health,
    local_server,
    read_token_file,
    record_url,
    serve_url,
    stand_in_hint,
    token_words,
)
from .connection.ports import choose_free_ports
from .connection.serve_log import cause_from_log
from .exit_guard import ExitGuard, block_stop_signals, exit_on_signal
from .tui_command import add_ui_arguments, run_app, settings_from
from .views.quit_outcome import QuitOutcome, up_quit_message

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 15.0


class UpError(Exception):
    """Why the quick start could not get a server, worded for the operator."""


@dataclass
class Server:
    url: str
    token: str | None
    process: subprocess.Popen | None = None  # None: it was already running, leave it alone
    log_path: Path | None = None
    _lines: list[str] = field(default_factory=list)
    log_start: int = 0  # where this start's lines begin in `log_path`
    notes: list[str] = field(default_factory=list)  # what the operator should know (ports swapped)
    data_dir: Path | None = None  # where its URL is recorded for the other commands (started here)

    @property
    def started_here(self) -> bool:
        return self.process is not None

    def stop(self) -> int | None:
        """Stop the server if this command started it (TERM, then KILL after a grace)."""
        proc = self.process
        if proc is None:
            return None
        if self.data_dir is not None:
            forget_url(self.data_dir, self.url)
        if proc.poll() is not None:
            return proc.returncode
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


def start_server(
    url: str,
    data_dir: Path | None,
    log_path: Path,
    timeout: float = START_TIMEOUT_S,
    env: dict[str, str] | None = None,
) -> Server:
    """Start `cascade serve` for `url` in the background (with `env` added to this process's
    environment); return once /api/health answers."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise UpError(
            f"cannot start a server for {url}: `cascade up` starts local http servers "
            "only; start the server yourself and use `cascade tui`"
        )
    port = parts.port or 80
    host = parts.hostname
    if host == "127.0.0.1" and os.environ.get("CASCADE_HOST", "").strip() in ("0.0.0.0", "::"):
        host = os.environ["CASCADE_HOST"].strip()  # every address, as chosen (`serve_url`)
    cmd = [sys.executable, "-m", "cascade_tui.cli", "serve", "--host", host, "--port", str(port)]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The server's own log (the terminal belongs to the UI), as private as its data directory.
    log = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
    log_start = log.tell()  # what this start writes: where its cause will be if it fails
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env} if env else None,
        start_new_session=True,  # Ctrl+C and the terminal's signals go to the UI, not the server
    )
    log.close()
    server = Server(url=url, token=None, process=proc, log_path=log_path, log_start=log_start)
    token_seen = threading.Event()

    def read_stdout() -> None:
        # SIGHUP/SIGTERM belong to the main thread now and to the exit guard later, never here.
        block_stop_signals()
        # Read the banner (`app:`, `token:`), then keep draining so the server never blocks.
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("token: "):
                value = line.split(":", 1)[1].strip()
                server.token = None if value.startswith("(none") else value
                token_seen.set()
            elif not token_seen.is_set():
                server._lines.append(line)
        token_seen.set()

    threading.Thread(target=read_stdout, daemon=True, name="cascade-serve-stdout").start()
    try:
        return _wait_ready(server, token_seen, timeout)
    except BaseException:
        server.stop()  # interrupted or failed while starting: leave nothing behind
        raise


def _wait_ready(server: Server, token_seen: threading.Event, timeout: float) -> Server:
    proc, url, log_path = server.process, server.url, server.log_path
    assert proc is not None
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            token_seen.wait(2)
            cause = cause_from_log(_read_from(log_path, server.log_start)) if log_path else None
            raise UpError(
                f"`cascade serve` exited with status {proc.returncode} before it was "
                f"ready{': ' + cause if cause else ''}; its log is {log_path}"
            )
        if token_seen.is_set() and health(url, timeout=1.0) is not None:
            return server
        if time.monotonic() > deadline:
            raise UpError(
                f"`cascade serve` did not answer at {url} within {timeout:.0f} s; its log is {log_path}"
            )
        time.sleep(0.1)


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


def find_or_start_server(
    url: str,
    token: str | None,
    data_dir: Path | None,
    log_path: Path | None = None,
    *,
    free_ports: bool = False,
) -> Server:
    """The server at `url` if one answers (token from settings or its token file), else a new one.
    `free_ports`: the URL is the default, not the operator's choice, so a taken app port is
    swapped for a free one; so is a taken embedded S3 port the operator did not choose. Each
    swap is said in `Server.notes`."""
    data = data_dir or default_data_dir()
    answer = health(url)
    if answer is not None:
        if token is None and answer.get("auth", True):
            token = read_token_file(data)
        return Server(
            url=url,
            token=token,
            notes=[f"using the server already running at {url} (it keeps running when you quit)"],
        )
    url, env, notes = choose_free_ports(url, os.environ, url_chosen=not free_ports)
    server = start_server(url, data_dir, log_path or data / "serve.log", env=env)
    server.notes = notes
    # Other commands (`cascade runs`, a second `cascade up`) find it there, also on another port.
    server.data_dir = data
    record_url(data, server.url)
    return server


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="cascade up",
        description="Quick start: use the Cascade server at CASCADE_URL (else CASCADE_HOST and "
        f"CASCADE_PORT, as `cascade serve` reads them; default {DEFAULT_URL}) or start one there with the embedded defaults, open the terminal UI, "
        "and stop the server it started when the UI quits.",
    )
    add_ui_arguments(parser)
    parser.add_argument("--url", help=f"where the server is or will be (default {DEFAULT_URL})")
    parser.add_argument(
        "--data-dir", type=data_dir, help="data directory for a server this command starts (CASCADE_DATA_DIR)"
    )
    return parser


def data_dir(text: str) -> Path:
    """--data-dir's type: refused here, before a server starts and fails on it in its log."""
    path = Path(text)
    if problem := data_dir_problem(path):
        raise argparse.ArgumentTypeError(problem)
    return path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        settings = settings_from(args)
    except ConfigError as exc:
        print(f"cascade up: {exc}", file=sys.stderr)
        return 2
    # The terminal may go away at any moment (SSH dropped): while the server starts, SIGHUP and
    # SIGTERM raise SystemExit here so the `finally` clauses stop what was started. Once the
    # server is up (its signal mask inherited clear), the exit guard takes them over.
    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, exit_on_signal)
    url_given = "url" in settings.model_fields_set
    if not url_given and (chosen := serve_url()):
        # CASCADE_PORT / CASCADE_HOST: the operator chose where `cascade serve` listens.
        settings, url_given = settings.model_copy(update={"url": chosen}), True
    # A server an earlier `cascade up` started on another port (8000 was taken) is found by its
    # record in the data directory: never a second server on the same data.
    url, _ = local_server(settings.url, url_given, None, args.data_dir)
    say(f"cascade up: looking for a server at {url} …")
    server: Server | None = None
    guard: ExitGuard | None = None
    outcome: QuitOutcome | None = None
    try:
        try:
            server = find_or_start_server(
                url, settings.token_value(), args.data_dir, free_ports=not url_given
            )
        except UpError as exc:
            say(f"cascade up: {exc}")
            return 1
        guard = ExitGuard.for_this_terminal()
        for note in server.notes:
            say(f"cascade up: {note}")
        if server.started_here:
            assert server.process is not None
            guard.protect(server.process.pid)  # its own session: the group is serve + rclone
            say(f"cascade up: started `cascade serve` at {server.url} (log: {server.log_path})")
        guard.start()
        if server.data_dir is not None:  # the UI's install (A) builds for this server's data dir
            os.environ["CASCADE_DATA_DIR"] = str(server.data_dir)
        if hint := stand_in_hint(server.url, server.token):
            say(f"cascade up: {hint}")
        if page := browser_url(server.url):
            where = token_words(server.token, server.data_dir or args.data_dir or default_data_dir())
            say(f"cascade up: the same UI in a browser: {page} (it asks for the token: {where})")
        settings = settings_from(args, url=server.url, token=server.token)
        code, outcome = run_app(settings, guard, open_run=args.run)
        return code
    finally:
        if server is not None and server.started_here:
            server.stop()  # first: telling the terminal may fail if it is gone
        if server is not None and (server.started_here or outcome is not None):
            say(up_quit_message(outcome, url=server.url, started_here=server.started_here))
        if guard is not None:
            guard.finished()


def say(text: str) -> None:
    """A status line on stderr; silently dropped when the terminal is gone."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


if __name__ == "__main__":
    raise SystemExit(main())
