"""The Debian packages GPGPU-Sim's build needs, found by building it (accelsim-src/README.md):
which are missing here, the `apt-get install` line that adds them, and installing them."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Requirement:
    what: str  # a command, or a header file
    package: str  # the Debian package that provides it
    header: bool = False


REQUIREMENTS = (
    Requirement("g++", "build-essential"),
    Requirement("make", "build-essential"),
    Requirement("bison", "bison"),
    Requirement("flex", "flex"),
    Requirement("makedepend", "xutils-dev"),
    Requirement("xmllint", "libxml2-utils"),
    Requirement("zlib.h", "zlib1g-dev", header=True),
)
# Every package of the recipe, for CI and for --install-deps (apt-get skips those present).
ALL_PACKAGES = ("build-essential", "bison", "flex", "zlib1g-dev", "xutils-dev", "libxml2-utils")
HEADER_DIRS = (Path("/usr/include"), Path("/usr/local/include"), Path("/usr/include/x86_64-linux-gnu"))


def missing(
    which: Callable[[str], str | None] = shutil.which, header_exists: Callable[[str], bool] | None = None
) -> list[Requirement]:
    """The requirements not met here. Pure given its two probes (the defaults look at PATH and
    the usual include folders)."""
    has_header = header_exists or (lambda name: any((d / name).is_file() for d in HEADER_DIRS))
    return [r for r in REQUIREMENTS if not (has_header(r.what) if r.header else which(r.what))]


def packages(requirements: Iterable[Requirement]) -> list[str]:
    """Their packages, each once, in the recipe's order."""
    seen: list[str] = []
    for requirement in requirements:
        if requirement.package not in seen:
            seen.append(requirement.package)
    return seen


def apt_line(requirements: Iterable[Requirement]) -> str:
    return "apt-get install -y " + " ".join(packages(requirements))


def describe(requirements: Iterable[Requirement]) -> str:
    return ", ".join(f"{r.what} ({r.package})" for r in requirements)


def can_install() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def install(names: list[str]) -> tuple[bool, str]:
    """apt-get update + install; (succeeded, the last lines of its output when it failed)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *names],
    ):
        result = subprocess.run(argv, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            return False, "\n".join(tail)
    return True, ""
