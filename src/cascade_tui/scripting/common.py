"""What every scripting command shares: the connection flags, settings like `cascade tui`'s, the
client, one-line errors and the exit codes.

Exit codes: 0 done; 1 the run did not succeed (`--wait`, `cascade run wait`); 2 bad usage or
settings; 3 the server could not be reached, refused the token, or refused the request (an
unknown id, a run that cannot be deleted, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from cascade_core.cli_usage import EXIT_USAGE, OneLineErrorParser

from ..connection.client import CascadeClient
from ..connection.client_errors import ApiError, Unreachable
from ..connection.config import ConfigError, default_config_path, load_settings
from ..connection.local_server import local_server
from ..views.output import printable

EXIT_OK = 0
EXIT_NOT_SUCCEEDED = 1
EXIT_SERVER = 3

EXIT_CODES_HELP = (
    "exit codes: 0 done, 2 bad usage or settings, 3 no server, a refused token or a refused "
    "request (unknown id, ...)"
)
# `cascade run` alone can wait for a run, and say how it ended.
RUN_EXIT_CODES_HELP = EXIT_CODES_HELP.replace("0 done, ", "0 done, 1 the run did not succeed (with --wait), ")


class CommandError(Exception):
    """A one-line reason to stop, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "connection",
        f"flags first, then CASCADE_URL / CASCADE_TOKEN, then the config file (default {default_config_path()})",
    )
    group.add_argument("--url", help="the app's URL (CASCADE_URL; default http://127.0.0.1:8000)")
    group.add_argument(
        "--token",
        help="the bearer token (CASCADE_TOKEN; a flag shows in `ps`, prefer the variable or the config file)",
    )
    # Not `--config` as in `cascade tui`: `cascade run start --config` names GPU configs.
    group.add_argument(
        "--config-file",
        type=Path,
        help="TOML config file, as `cascade tui --config-file` takes it (CASCADE_CONFIG)",
    )


def new_parser(prog: str, description: str) -> argparse.ArgumentParser:
    return OneLineErrorParser(prog=prog, description=description, epilog=EXIT_CODES_HELP)


def int_from(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`, refused as bad usage (exit 2) with
    the range, before any request."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high} (got {text!r})"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high} (got {value})")
        return value

    return read


def identifier(text: str) -> str:
    """An id argument: an empty one would name the collection's route, not one of its items."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def segment(value: str) -> str:
    """An id as one URL path segment: `a/b` or `?` can never reach another route."""
    return quote(value, safe="")


def now() -> datetime:
    return datetime.now(UTC)


def emit(text: str, stream: TextIO | None = None) -> None:
    """Print to stdout (or `stream`); a closed pipe (`| head`) ends quietly."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except BrokenPipeError:
        sys.stderr.close()  # nothing more to say anywhere; avoid the interpreter's own complaint
        raise SystemExit(EXIT_OK) from None


def run_with_client(
    prog: str, args: argparse.Namespace, body: Callable[[CascadeClient], Awaitable[int]]
) -> int:
    """Settings from `args`, a client, then `body`; every failure is one line on stderr."""
    try:
        settings = load_settings(url=args.url, token=args.token, config=args.config_file)
    except ConfigError as exc:
        return fail(prog, str(exc), EXIT_USAGE)
    # Not told where: the server `cascade up` started on this machine (on 8001 if 8000 was taken).
    url, token = local_server(settings.url, "url" in settings.model_fields_set, settings.token_value())

    async def main() -> int:
        async with CascadeClient(url, token) as client:
            try:
                return await body(client)
            except ApiError as exc:
                if isinstance(exc, Unreachable):
                    raise
                # "404: File not found" from another program says nothing: say what answers.
                raise await client.not_cascade() or exc from None

    try:
        return asyncio.run(main())
    except CommandError as exc:
        return fail(prog, str(exc), exc.code)
    except ApiError as exc:
        return fail(prog, str(exc), EXIT_SERVER)
    except KeyboardInterrupt:
        return fail(prog, "interrupted", 130)


def fail(prog: str, message: str, code: int) -> int:
    """One line on stderr: a server's detail may quote what it was sent, control characters too."""
    print(printable(f"{prog}: {message}"), file=sys.stderr)
    return code
