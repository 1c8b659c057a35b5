"""The scanner's local side, blocking (it runs in threads): the mirror of each trace's objects
under `data_dir/traces/<trace_id>/`, and its book, the size and LastModified of every mirrored
object in `data_dir/trace-scan/<trace_id>.json` (ETags differ between S3 servers, so they are
not used), so a restarted scanner downloads only what changed."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cascade_core.s3_endpoint import S3Info
from cascade_core.trace_layout import TRACES_PREFIX

from .deletion import remove_trace_files
from .downloads import DOWNLOADS_NAME, download_path
from .postprocess import LOCK_NAME
from .scan_errors import mirror_error

if TYPE_CHECKING:
    from ..settings import Settings

log = logging.getLogger(__name__)

# (size, LastModified ISO) per path inside the trace
Listing = dict[str, tuple[int, str]]


def _write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:  # e.g. a name too long to have been created in the first place
        pass


class TraceMirror:
    def __init__(self, settings: Settings, s3: S3Info, client: Any) -> None:
        self.settings, self.s3, self.client = settings, s3, client
        self.mirror_root = settings.traces_dir
        self.book_dir = settings.trace_books_dir
        self._books: dict[str, Listing] = {}

    def forget(self, trace_id: str) -> None:
        self._books.pop(trace_id, None)

    def save_book(self, trace_id: str) -> None:
        _write_json_atomic(self.book_path(trace_id), self.book(trace_id))

    def directory(self, trace_id: str) -> Path:
        return self.mirror_root / trace_id

    def book_path(self, trace_id: str) -> Path:
        return self.book_dir / f"{trace_id}.json"

    def clear_files(self, trace_id: str) -> None:
        """Remove the mirror's files and the book of a trace id that has no trace (yet). The
        post-processing lock file stays: a post-processor of a server going away may hold it, and
        the new one must wait for that same lock, not take a fresh file's."""
        self._books.pop(trace_id, None)
        self.book_path(trace_id).unlink(missing_ok=True)
        directory = self.directory(trace_id)
        if not directory.is_dir():
            return
        for entry in directory.iterdir():
            if entry.name == LOCK_NAME:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                _unlink_quietly(entry)

    def remove_leftovers(self, known: set[str]) -> None:
        """Remove every mirror directory and book of a trace id that has no trace."""
        names = set()
        for root, suffix in ((self.mirror_root, ""), (self.book_dir, ".json")):
            if root.is_dir():
                names |= {p.name.removesuffix(suffix) for p in root.iterdir() if p.name.endswith(suffix)}
        for trace_id in sorted(names - known - {DOWNLOADS_NAME}):
            log.info("removing the files left of deleted trace %s", trace_id)
            remove_trace_files(self.settings, trace_id)

    def book(self, trace_id: str) -> Listing:
        if trace_id not in self._books:
            try:
                data = json.loads(self.book_path(trace_id).read_text())
                self._books[trace_id] = {rel: (int(v[0]), str(v[1])) for rel, v in data.items()}
            except (OSError, ValueError, TypeError, IndexError):
                self._books[trace_id] = {}
        return self._books[trace_id]

    def fetch(self, trace_id: str, to_fetch: list[str], removed: list[str]) -> list[str]:
        """Download new/changed objects (temp file + rename) and delete vanished ones; returns the
        paths fetched. An object deleted since the listing is skipped until the next scan; any
        other failure raises `mirror_error`'s TraceReadError or TraceRetryLater."""
        from botocore.exceptions import ClientError

        directory = self.directory(trace_id)
        fetched = []
        for rel in to_fetch:
            target = directory / rel
            tmp = download_path(self.settings, trace_id)  # never beside it: keys take any name
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                self.client.download_file(self.s3.bucket, f"{TRACES_PREFIX}{trace_id}/{rel}", str(tmp))
            except ClientError as exc:
                _unlink_quietly(tmp)
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                    continue
                raise mirror_error(rel, exc) from None
            except Exception as exc:
                _unlink_quietly(tmp)
                raise mirror_error(rel, exc) from None
            except BaseException:
                _unlink_quietly(tmp)
                raise
            os.replace(tmp, target)
            fetched.append(rel)
        for rel in removed:
            (directory / rel).unlink(missing_ok=True)
        return fetched

    def delete_objects(self, trace_id: str) -> int:
        paginator = self.client.get_paginator("list_objects_v2")
        deleted = 0
        for page in paginator.paginate(Bucket=self.s3.bucket, Prefix=f"{TRACES_PREFIX}{trace_id}/"):
            keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
            if keys:  # a listing page holds at most 1,000 keys, what one DeleteObjects takes
                answer = self.client.delete_objects(
                    Bucket=self.s3.bucket, Delete={"Objects": keys, "Quiet": True}
                )
                if errors := answer.get("Errors"):
                    first = errors[0]
                    raise OSError(
                        f"{first.get('Key')}: {first.get('Code')} {first.get('Message', '')}".strip()
                    )
                deleted += len(keys)
        return deleted
