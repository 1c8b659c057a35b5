"""A GPU config added with `cascade configs add`, on a host that cannot see it: fetched over the
API (`GET /api/gpu-configs/{name}/files`) into the sim's own scratch folder.

The server keeps added configs in its data directory and tells the worker where
(`CASCADE_GPU_CONFIG_DIR`). A local worker, or a Slurm node that mounts the data directory, reads
them there. Elsewhere the folder is missing, and the worker asks for the files by the config's
name, as it fetches a trace it cannot see (trace_fetch.py). A config is a few small text files
(kilobytes; AccelWattch's up to a few hundred), so each sim fetches its own copy: nothing to
share or clean up between sims."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx

from cascade_core.error_detail import error_detail
from cascade_core.models import GpuConfigFiles

from . import accelsim
from .settings import Options

log = logging.getLogger("cascade_worker")

GPGPUSIM_CONFIG = "gpgpusim.config"


class ConfigFetchError(Exception):
    """The config's files could not be fetched; the message is the sim's error."""


def needed(options: Options) -> bool:
    """A real simulator will run an added config whose folder is not on this host."""
    return (
        options.replay is None
        and accelsim.is_installed(options.accelsim_dir)
        and options.gpu_config is not None
        and options.gpu_config_dir is not None
        and not (options.gpu_config_dir / GPGPUSIM_CONFIG).is_file()
    )


def safe_name(name: str) -> bool:
    """A file name the server may send: a plain name, never a path out of the folder."""
    return (
        bool(name) and "/" not in name and "\\" not in name and name not in (".", "..") and "\0" not in name
    )


async def fetch(options: Options, folder: Path) -> Path:
    """The config's files in `folder` (created); ConfigFetchError saying why not."""
    name = options.gpu_config
    assert name is not None
    headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
    url = f"{options.url.rstrip('/')}/api/gpu-configs/{name}/files"
    try:
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            response = await http.get(url)
    except httpx.HTTPError as exc:
        raise ConfigFetchError(f"cannot fetch GPU config {name}: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise ConfigFetchError(
            f"cannot fetch GPU config {name}'s files: HTTP {response.status_code} {error_detail(response)}"
        )
    try:
        files = GpuConfigFiles.model_validate_json(response.content).files
    except ValueError:
        raise ConfigFetchError(f"GPU config {name}'s files came back unreadable") from None
    if GPGPUSIM_CONFIG not in files or not all(safe_name(n) for n in files):
        raise ConfigFetchError(f"GPU config {name}'s files came back without a usable {GPGPUSIM_CONFIG}")
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (folder / file_name).write_bytes(text.encode("utf-8"))
    log.info("fetched GPU config %s (%d files) into %s", name, len(files), folder)
    return folder
