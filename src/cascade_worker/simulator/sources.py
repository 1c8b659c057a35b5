"""The two source trees a build needs: pinned public commits (downloaded from GitHub), or local
tarballs / checkouts. Fetch, verify, unpack.

A pinned tarball must match its sha256 byte for byte (accelsim-src/README.md); a local tarball
named like a pinned one (`<repo>-<commit>.tar.gz`) must too, so a corrupt copy is caught before
a 5-minute build, with a message that says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A source cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Pinned:
    repo: str  # owner/name on GitHub
    commit: str
    sha256: str

    @property
    def name(self) -> str:
        return self.repo.split("/")[1]

    @property
    def url(self) -> str:
        return f"https://codeload.github.com/{self.repo}/tar.gz/{self.commit}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.commit}.tar.gz"


FRAMEWORK = Pinned(
    "accel-sim/accel-sim-framework",
    "73f9fac68a1a717750da54d2d867c7524b47b4c3",
    "4095e41646711c04996c9e0627d437637e4b36a45c1fb376fe5ce1a616c0995e",
)
GPGPU_SIM = Pinned(
    "accel-sim/gpgpu-sim_distribution",
    "667834cfe5214523edd7769aeab77f91b7137686",
    "f094668c29d9622e819931c8d8ba7c07a4115b4b6b8e2a839e65189dad69aff2",
)

_COMMIT_IN_NAME = re.compile(r"-([0-9a-f]{40})(?:\.tar\.gz|\.tgz)?$")


@dataclass(frozen=True)
class Source:
    """One resolved source: where it is, what identifies it, and its commit when known."""

    pinned: Pinned
    path: Path | None  # None: the pinned commit, downloaded when needed
    ident: str  # sha256 of a tarball, or a content hash of a checkout
    commit: str | None

    @property
    def kind(self) -> str:
        return "pinned" if self.path is None else ("checkout" if self.path.is_dir() else "tarball")

    def describe(self) -> str:
        return self.pinned.url if self.path is None else str(self.path)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def commit_from_name(name: str) -> str | None:
    """`accel-sim-framework-73f9….tar.gz` or a folder `…-73f9…` -> the 40-hex commit."""
    match = _COMMIT_IN_NAME.search(name)
    return match.group(1) if match else None


def resolve(pinned: Pinned, given: Path | None) -> Source:
    """The pinned commit when nothing is given; else the local tarball or checkout, checked."""
    if given is None:
        return Source(pinned, None, pinned.sha256, pinned.commit)
    path = given.expanduser().absolute()
    if path.is_dir():
        return Source(pinned, path, _tree_hash(path), _checkout_commit(path))
    if not path.is_file():
        raise SourceError(
            f"{given}: no such file or directory (give a .tar.gz of {pinned.repo} or a checkout)"
        )
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    commit = commit_from_name(path.name)
    if commit == pinned.commit and digest != pinned.sha256:
        raise SourceError(
            f"{path} is corrupt: its sha256 is {digest}, but {pinned.repo} at {commit[:8]} is "
            f"{pinned.sha256}; fetch it again"
        )
    return Source(pinned, path, digest, commit)


def _checkout_commit(path: Path) -> str | None:
    if (path / ".git").exists() and shutil.which("git"):
        result = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
        if result.returncode == 0:
            return result.stdout.strip()
    return commit_from_name(path.name)


def _tree_hash(root: Path) -> str:
    """A checkout's identity: names, sizes and modification times of its files (not .git)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            full = Path(dirpath, name)
            try:
                stat = full.lstat()
            except OSError:
                continue
            digest.update(f"{full.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return "tree-" + digest.hexdigest()


def download(source: Source, downloads: Path, timeout: float = 60.0) -> Path:
    """The pinned tarball in `downloads`, fetched once and verified."""
    target = downloads / source.pinned.filename
    if target.is_file() and sha256_file(target) == source.pinned.sha256:
        return target
    downloads.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    try:
        with (
            urllib.request.urlopen(source.pinned.url, timeout=timeout) as response,
            open(partial, "wb") as out,
        ):
            shutil.copyfileobj(response, out, 1 << 20)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        partial.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise SourceError(
            f"cannot download {source.pinned.url}: {reason}. Without GitHub access, pass local "
            f"tarballs or checkouts: --framework PATH --gpgpu-sim PATH"
        ) from None
    digest = sha256_file(partial)
    if digest != source.pinned.sha256:
        partial.unlink(missing_ok=True)
        raise SourceError(
            f"{source.pinned.url} sent a file with sha256 {digest}, not the pinned "
            f"{source.pinned.sha256}; refusing to build it"
        )
    os.replace(partial, target)
    return target


def unpack(source: Source, tarball_or_dir: Path, dest: Path) -> None:
    """The tree's contents into `dest` (which must not exist), without its top folder."""
    if tarball_or_dir.is_dir():
        shutil.copytree(tarball_or_dir, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        return
    holder = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(holder, ignore_errors=True)
    holder.mkdir(parents=True)
    try:
        with tarfile.open(tarball_or_dir, "r:*") as archive:
            archive.extractall(holder, filter="data")
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        shutil.rmtree(holder, ignore_errors=True)
        raise SourceError(
            f"{tarball_or_dir} is not a readable .tar.gz ({exc}); the file is corrupt "
            "or not a source tarball: fetch it again"
        ) from None
    entries = list(holder.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else holder
    os.replace(top, dest)
    shutil.rmtree(holder, ignore_errors=True)


def local_path(source: Source, downloads: Path) -> Path:
    """Where the source's bytes are on this machine (downloading the pinned tarball if needed)."""
    return source.path if source.path is not None else download(source, downloads)
