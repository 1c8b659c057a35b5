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


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one line (`cascade upload: the following arguments are required: DIR
    (--help for usage)`), exit 2. Sub-command parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, spelled_out(f"{self.prog}: {message} (--help for usage)") + "\n")
