"""Where GPU configs added with `cascade configs add` live: `DATA_DIR/gpu-configs/<name>/`, each
folder holding the config's files as given (gpgpusim.config, trace.config, *.icnt, AccelWattch
files) and `cascade-config.json` (its arch as resolved when it was added, and when).

In the data directory, not in a simulator build: they survive restarts and a new build (`cascade
simulator install` makes a new folder under `builds/`, and the server follows `simulator/current`).
A config appears whole or not at all: its files are written into a hidden staging folder and
renamed into place; a removed one is renamed aside first, then deleted. Hidden folders left by a
crash are cleared when the server starts."""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path

from cascade_core import power_report
from cascade_core.config_probe import ConfigFiles
from cascade_core.gpu_config_text import parse_gpgpusim_config
from cascade_core.models import GpuConfig, GpuConfigAdd, utcnow

from .datadir import PRIVATE_DIR, private_dir

log = logging.getLogger(__name__)

FOLDER = "gpu-configs"
META = "cascade-config.json"
GPGPUSIM_CONFIG = "gpgpusim.config"


class AddedConfigs:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / FOLDER

    def folder(self, name: str) -> Path:
        return self.root / name

    def files(self, name: str) -> ConfigFiles:
        return ConfigFiles.in_folder(self.folder(name), name)

    def scan(self) -> dict[str, GpuConfig]:
        """Every added config that can be read, by name (blocking: small files)."""
        configs: dict[str, GpuConfig] = {}
        try:
            folders = sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            return configs
        for folder in folders:
            try:
                text = (folder / GPGPUSIM_CONFIG).read_text(errors="replace")
                meta = json.loads((folder / META).read_text())
            except (OSError, ValueError) as exc:
                log.warning("skipping added GPU config %s: %s", folder, exc)
                continue
            arch = meta.get("arch") if isinstance(meta, dict) else None
            config = parse_gpgpusim_config(
                text,
                folder.name,
                arch=arch if isinstance(arch, str) else None,
                added=True,
                power_model=(folder / power_report.MODEL_FILE).is_file(),
            )
            if config is None:
                log.warning("skipping added GPU config %s: no clock or arch", folder)
                continue
            configs[config.name] = config
        return configs

    def stage(self, body: GpuConfigAdd, config: GpuConfig) -> Path:
        """The config's files in a hidden folder beside their final place (same file system, so
        `commit` is one rename)."""
        staging = private_dir(self.root) / f".staging-{body.name}-{uuid.uuid4().hex[:8]}"
        staging.mkdir(mode=PRIVATE_DIR)  # private, as everything in the data directory
        try:
            for name, text in body.files.items():
                # bytes as given: AccelWattch files keep their CRLF line ends
                (staging / name).write_bytes(text.encode("utf-8"))
            meta = {
                "name": config.name,
                "arch": config.arch,
                "added_at": utcnow().isoformat(timespec="seconds"),
            }
            (staging / META).write_text(json.dumps(meta, indent=2) + "\n")
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return staging

    def commit(self, staging: Path, name: str) -> None:
        os.rename(staging, self.folder(name))  # refuses to replace an existing config's folder

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    def remove(self, name: str) -> None:
        aside = self.root / f".removed-{name}-{uuid.uuid4().hex[:8]}"
        os.rename(self.folder(name), aside)  # gone from every listing at once
        shutil.rmtree(aside, ignore_errors=True)

    def clear_leftovers(self) -> None:
        """Staging and removed folders a crash left behind."""
        try:
            leftovers = [p for p in self.root.iterdir() if p.name.startswith((".staging-", ".removed-"))]
        except OSError:
            return
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)
