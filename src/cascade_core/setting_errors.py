"""What is wrong with a setting, in one line, shared by `cascade serve`, `cascade upload`, `cascade up`
and the UI's settings.

Pure (pydantic only). pydantic's own words for a bounded number name one bound at a time (a NaN
"should be less than or equal to 4"); a setting with both bounds says the whole range instead."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import annotated_types
from pydantic import BaseModel, ValidationError

# pydantic's error types for a number outside its bounds, or not a finite number at all.
_RANGE_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "finite_number",
    "int_parsing",
    "float_parsing",
    "int_from_float",
}


def number_range(model: type[BaseModel], field: str) -> tuple[Any, Any] | None:
    """The field's (lowest, highest) allowed values, when it has both inclusive bounds."""
    info = model.model_fields.get(field)
    if info is None:
        return None
    low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
    return None if low is None or high is None else (low, high)


def range_problem(model: type[BaseModel], err: Any) -> str | None:
    """`must be a number from 0.5 to 4 (got nan)` for a bounded field's error, else None."""
    field = str(err["loc"][0]) if err["loc"] else ""
    bounds = number_range(model, field)
    if bounds is None or err["type"] not in _RANGE_ERRORS:
        return None
    low, high = bounds
    got = f" (got {err['input']!r})" if "input" in err else ""
    return f"must be a number from {low:g} to {high:g}{got}"


def settings_problem_line(model: type[BaseModel], exc: ValidationError, flags: Mapping[str, str]) -> str:
    """`CASCADE_PORT / --port must be a number from 1 to 65535 (got 99999)`: every wrong setting
    on one line, named as the operator sets it (pydantic's own text is one line per field, and a
    header line that names the class). `flags`: the command-line flag of a field that has one."""
    problems = []
    for err in exc.errors(include_url=False):
        field = str(err["loc"][0]) if err["loc"] else ""
        name = f"CASCADE_{field.upper()}" + (f" / {flags[field]}" if field in flags else "")
        reason = range_problem(model, err) or str(err["msg"]).removeprefix("Value error, ")
        problems.append(f"{name}: {reason}")
    return "; ".join(problems)


def data_dir_problem(path: Path) -> str | None:
    """Why `path` cannot be a data directory (it, or a parent, is a file), or None."""
    blocker = _non_directory_on(path)
    if blocker is None:
        return None
    return (
        f"{path} is not a directory"
        if blocker == path
        else f"{path} cannot be a directory: {blocker} is a file"
    )


def _non_directory_on(path: Path) -> Path | None:
    """The first existing path of `path` and its parents, when that is not a directory."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return None if candidate.is_dir() else candidate
        except OSError:  # unreadable: the server says so when it opens it
            return None
    return None


def token_problem(token: str) -> str | None:
    """Why a token cannot travel in an `Authorization: Bearer` header, or None. Printable ASCII
    without spaces only: a newline or a control character cannot be sent at all, a space at
    either end is lost, and other encodings differ between clients."""
    if not token:
        return "the token is empty"
    bad = next((c for c in token if not "!" <= c <= "~"), None)
    if bad is not None:
        return (
            f"the token holds {bad!r}, which an HTTP header cannot carry as is: use printable "
            "ASCII without spaces (letters, digits and punctuation)"
        )
    return None


# A host as a URL may carry it: a DNS name, an IPv4 address or a bracketed IPv6 address, then an
# optional port. Nothing a shell, Markdown or a URL would read as more than a name.
_HOST_PORT = re.compile(
    r"(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?"
)
_URL_PATH = re.compile(r"(?:/[A-Za-z0-9._~-]*)*")


def host_port_ok(host: str) -> bool:
    """`host` (a Host header) is a hostname or IP address with an optional port, nothing else."""
    return len(host) <= 300 and _HOST_PORT.fullmatch(host) is not None


def url_problem(url: str) -> str | None:
    """Why `url` cannot be the app's URL (CASCADE_PUBLIC_URL), or None: http or https, a host
    as `host_port_ok` takes it, and a plain path; no user, query or fragment."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not host_port_ok(parts.netloc):
        return f"{url!r} is not an http(s)://host[:port] URL"
    if parts.query or parts.fragment or "?" in url or "#" in url or not _URL_PATH.fullmatch(parts.path):
        return f"{url!r} may have a plain path (letters, digits, . _ ~ - and /) but no query or fragment"
    return None


# sbatch options Cascade sets itself and depends on: the job name finds its jobs after a restart,
# the array maps tasks to sims, the export carries the worker's settings, --parsable the job id.
RESERVED_SBATCH_OPTIONS = {"job-name": "J", "array": "a", "export": None, "parsable": None}


def reserved_option_problem(extra: list[str]) -> str | None:
    """Why CASCADE_SLURM_ARGS may not hold one of these arguments (extra arguments go last, so they
    would win), or None. Long options count by any prefix sbatch takes (`--job=x`), short ones
    alone or with their value attached (`-J x`, `-Jx`)."""
    for arg in extra:
        if arg.startswith("--") and len(arg) > 3:
            given = arg[2:].split("=", 1)[0]
            hits = [name for name in RESERVED_SBATCH_OPTIONS if name.startswith(given)]
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            hits = [name for name, short in RESERVED_SBATCH_OPTIONS.items() if short and arg[1] == short]
        else:
            continue
        if hits:
            return (
                f"CASCADE_SLURM_ARGS may not set --{hits[0]} ({arg!r}): Cascade sets it itself and needs "
                "it to track its jobs (the job name finds them again after a restart); remove it"
            )
    return None
