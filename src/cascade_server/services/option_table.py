"""GPGPU-Sim's option table, read from the sources of an Accel-Sim tree: the type of each option
(cascade_core.option_types says why the echo is not enough and what each type takes).

Both trees a server uses hold their sources: a build `cascade simulator install` made is built in
place, and `CASCADE_ACCELSIM_DIR` names a checkout. A tree without them has no table: its options'
values then follow only the rules every value follows.
"""

from __future__ import annotations

import logging
from pathlib import Path

from cascade_core.option_types import merge_tables, parse_option_table

log = logging.getLogger(__name__)

SOURCES = Path("gpu-simulator")
SUFFIXES = (".cc", ".cpp", ".h")
# Third-party code (pybind11) registers no option; option_parser.cc registers only its own unit
# test's made-up options.
SKIPPED_DIRS = ("extern",)
SKIPPED_FILES = ("option_parser.cc",)
MAX_SOURCE_BYTES = 4 * 1024 * 1024  # no source file of GPGPU-Sim comes near (the largest is ~200 KB)


def read_option_table(accelsim: Path) -> dict[str, str]:
    """Option name -> type word for every option the tree's sources register under a literal name;
    empty when the tree has no sources. Reads some 8 MB (about 0.1 s): call it off the loop, once
    per build."""
    root = accelsim / SOURCES
    tables: list[dict[str, str]] = []
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        relative = path.relative_to(root)
        if (
            path.suffix not in SUFFIXES
            or relative.parts[0] in SKIPPED_DIRS
            or path.name in SKIPPED_FILES
            or not path.is_file()
        ):
            continue
        try:
            if path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            text = path.read_text(errors="replace")
        except OSError as exc:
            log.warning("cannot read %s for the simulator's option types: %s", path, exc)
            continue
        if "option_parser_register" in text:
            tables.append(parse_option_table(text))
    return merge_tables(tables)
