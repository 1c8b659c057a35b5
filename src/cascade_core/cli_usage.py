"""One way for every `cascade` subcommand to answer a usage error: one line on stderr naming the
command and the problem, pointing at --help, and exit code 2. argparse's default prints the whole
usage block first, which buries the one line that matters; `--help` still shows all of it.

Pure (argparse only), so the worker, the server and the UI's commands share it."""

from __future__ import annotations

import argparse
import unicodedata
from typing import NoReturn

EXIT_USAGE = 2


def spelled_out(text: str) -> str:
    """`text` with every control character spelled out (`\\x1b`, `\\n`): what a user typed (or a
    server said) must not move the cursor, recolour or clear the terminal, nor break a line."""
    if text.isprintable():
        return text
    return "".join(repr(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch for ch in text)


def not_utf8_problem(args: list[str]) -> str | None:
    """Why `args` (argv as Python decodes it: bytes that are not UTF-8 become lone surrogates,
    "surrogateescape") cannot be used, naming the first bad argument with its bytes spelled out
    (`'\\xff'`), or None. Refused up front, once for every subcommand: such an argument would
    only fail later, deep in an HTTP request or a file name, as a traceback."""
    for index, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            previous = args[index - 1] if index else ""
            of = f" of {previous}" if previous.startswith("-") and "=" not in previous else ""
            return f"argument{of} '{spelled_bytes(arg)}' is not valid UTF-8"
    return None


def spelled_bytes(arg: str) -> str:
    """An argument decoded with surrogateescape, its bytes that are not UTF-8 spelled `\\xff`."""
    try:
        raw = arg.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte decodes to (given in code, not by a shell)
        return spelled_out(arg.encode("utf-8", "backslashreplace").decode())
    return spelled_out(raw.decode("utf-8", "backslashreplace"))


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one line (`cascade upload: the following arguments are required: DIR
    (--help for usage)`), exit 2. Sub-command parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, usage_error_line(self.prog, message) + "\n")


def usage_error_line(prog: str, message: str) -> str:
    """The one line a usage error prints, for a problem found after argparse (a setting)."""
    return spelled_out(f"{prog}: {message} (--help for usage)")
