"""`cascade tui`: open the terminal UI on a running Cascade server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cascade_core.cli_usage import OneLineErrorParser

from .connection.config import ConfigError, TuiSettings, default_config_path, load_settings, save_config
from .connection.local_server import local_server
from .exit_guard import ExitGuard
from .views.quit_outcome import QuitOutcome, tui_quit_message


def build_parser(prog: str = "cascade tui") -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=prog,
        description="Open the Cascade terminal UI. Settings come from these flags, then the "
        "CASCADE_URL / CASCADE_TOKEN environment variables, then the config file "
        f"(default {default_config_path()}, mode 0600).",
    )
    add_ui_arguments(parser)
    parser.add_argument("--url", help="the app's URL (CASCADE_URL; default http://127.0.0.1:8000)")
    parser.add_argument(
        "--token",
        help="the bearer token (CASCADE_TOKEN); prefer the env "
        "variable or the config file, since flags show in `ps`",
    )
    parser.add_argument(
        "--save-config",
        action="store_true",
        help="write the URL and token to the config file (mode 0600) and exit",
    )
    return parser


def add_ui_arguments(parser: argparse.ArgumentParser) -> None:
    # `--config-file`, as in the script commands (where `--config` names a GPU config); the old
    # `--config` stays as a hidden alias so scripts that pass it keep working.
    parser.add_argument("--config-file", dest="config", type=Path, help="TOML config file (CASCADE_CONFIG)")
    parser.add_argument("--config", dest="config", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--download-dir", type=Path, help="where downloads are saved (default ./cascade-downloads)"
    )
    parser.add_argument("--refresh-hz", type=float, help="live redraw rate, 0.5 to 4 (default 2)")
    parser.add_argument("--run", metavar="RUN_ID", help="open this run at start")


def settings_from(args: argparse.Namespace, **overrides: object) -> TuiSettings:
    return load_settings(
        url=overrides.get("url", getattr(args, "url", None)),
        token=overrides.get("token", getattr(args, "token", None)),
        config=args.config,
        download_dir=args.download_dir,
        refresh_hz=args.refresh_hz,
    )


def run_app(
    settings: TuiSettings, guard: ExitGuard, open_run: str | None = None
) -> tuple[int, QuitOutcome | None]:
    """Run the UI under a started `guard` (SIGHUP/SIGTERM or a gone terminal always exit); its
    exit code, and what quitting did to unfinished sims (None: it did not quit with `q`)."""
    from .app import CascadeApp  # Textual is imported only when the UI really starts

    app = CascadeApp(settings, guard=guard, open_run=open_run)
    try:
        result = app.run()
    finally:
        guard.ui_returned()
    return int(result or 0), app.quit_outcome


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        settings = settings_from(args)
        if not args.save_config:  # saves what it was given, never what it found
            # Not told where: the server `cascade up` started on this machine, like the commands.
            url, token = local_server(
                settings.url, "url" in settings.model_fields_set, settings.token_value()
            )
            settings = settings_from(args, url=url, token=token)
    except ConfigError as exc:
        print(f"cascade tui: {exc}", file=sys.stderr)
        return 2
    if args.save_config:
        path = (args.config or default_config_path()).expanduser()
        save_config(path, settings.url, settings.token_value())
        print(f"saved URL{' and token' if settings.token else ''} to {path} (mode 0600)")
        return 0
    guard = ExitGuard.for_this_terminal().start()
    try:
        code, outcome = run_app(settings, guard, open_run=args.run)
        if message := tui_quit_message(outcome, url=settings.url):
            print(message, file=sys.stderr)
        return code
    finally:
        guard.finished()


if __name__ == "__main__":
    raise SystemExit(main())
