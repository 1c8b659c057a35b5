"""Which simulator options a GPU config takes, and checking a run's entries against them.

The options a config knows are the `-name value` lines of its `gpgpusim.config` and
`trace.config`; the options the simulator knows are the ones `accel-sim.out` prints in its config
echo, read once per simulator build and config files (`cascade_core/config_probe.py`: started on
the config with a trace that does not exist, `accel-sim.out` prints every option it registers
with the config's value and a description, and exits, in about 0.3 s). Without a runnable simulator only the config
files' options are known. The type of each option comes from the simulator's option table in
its sources (option_table.py), and each value is checked against it (cascade_core/option_types.py).
The rules (names, values, labels) are in cascade_core/variants.py; what cannot run is refused with
Invalid.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from cascade_core import config_probe
from cascade_core.config_probe import ConfigFiles
from cascade_core.models import ConfigOption, RunEntry
from cascade_core.option_types import typed_value_problem
from cascade_core.quoting import quoted
from cascade_core.variants import (
    OptionInfo,
    VariantError,
    config_file_options,
    default_label,
    label_problem,
    name_problem,
    normalize_options,
    options_key,
)

from ..domain_errors import Invalid
from ..gpu_configs import ACCELSIM_BINARY
from .option_table import read_option_table

log = logging.getLogger(__name__)

STAND_IN_REFUSES = (
    "the stand-in cannot honour simulator options (entry {n}, {config}): it replays a "
    "recorded log. Install the real simulator (`cascade simulator install`) to run variants"
)

# Where a config's files are, by name (None: no such config).
Locate = Callable[[str], ConfigFiles | None]


class OptionCatalog:
    """The options of each config, per Accel-Sim tree; the simulator's echo cached per build."""

    def __init__(self) -> None:
        self._echo: dict[tuple[str, float, str, float], dict[str, OptionInfo] | None] = {}
        self._types: dict[tuple[str, float | None], dict[str, str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def config_files(self, config: ConfigFiles) -> dict[str, str]:
        options: dict[str, str] = {}
        for path in (config.gpgpusim_config, config.trace_config):
            if path is None:
                continue
            try:
                options.update(config_file_options(path.read_text(errors="replace")))
            except OSError:
                continue
        return options

    async def simulator_echo(
        self, accelsim: Path | None, config: ConfigFiles
    ) -> dict[str, OptionInfo] | None:
        """Every option the simulator registers, with this config's values; None without a simulator
        that runs here."""
        if accelsim is None:
            return None
        binary = accelsim / ACCELSIM_BINARY
        try:
            mtime = binary.stat().st_mtime
            config_mtime = config.gpgpusim_config.stat().st_mtime
        except OSError:
            return None
        # per build and per config files: a config added again under its name is another config
        key = (str(binary), mtime, str(config.directory), config_mtime)
        if key not in self._echo:
            async with self._locks.setdefault(config.name, asyncio.Lock()):
                if key not in self._echo:
                    self._echo[key] = await asyncio.to_thread(probe, accelsim, config)
        return self._echo[key]

    async def option_types(self, accelsim: Path | None) -> dict[str, str]:
        """The simulator's option table (name -> type), read once per build of its tree."""
        if accelsim is None:
            return {}
        try:
            built: float | None = (accelsim / ACCELSIM_BINARY).stat().st_mtime
        except OSError:
            built = None  # sources without a build: still their table
        key = (str(accelsim), built)
        if key not in self._types:
            async with self._locks.setdefault(f"types:{accelsim}", asyncio.Lock()):
                if key not in self._types:
                    self._types[key] = await asyncio.to_thread(read_option_table, accelsim)
        return self._types[key]

    async def options(self, config: ConfigFiles, accelsim: Path | None) -> list[ConfigOption]:
        """What `GET /api/gpu-configs/{name}/options` lists: the simulator's options with the
        config's values (or only the config files' options without a simulator), by name. Only
        options an entry may give: never one POST /api/runs refuses (name_problem: `-config` and
        `-trace`, which Cascade sets itself, and names that are no option name)."""
        files = self.config_files(config)
        echo = await self.simulator_echo(accelsim, config)
        if echo:
            return [
                ConfigOption(name=o.name, value=o.value, description=o.description, in_config=o.name in files)
                for o in sorted(echo.values(), key=lambda o: o.name)
                if name_problem(o.name) is None
            ]
        return [
            ConfigOption(name=name, value=value, in_config=True)
            for name, value in sorted(files.items())
            if name_problem(name) is None
        ]

    async def check_entries(
        self,
        entries: list[RunEntry],
        *,
        locate: Locate,
        accelsim: Path | None,
        stand_in: bool,
        tree: Path | None = None,
    ) -> list[RunEntry]:
        """The entries with canonical options and a label where they have options or one was
        given; raises Invalid naming the entry and option for anything that cannot run."""
        seen_variants: dict[tuple, int] = {}
        seen_labels: dict[str, int] = {}
        out: list[RunEntry] = []
        for n, entry in enumerate(entries):
            where = f"entry {n} ({entry.gpu_config})"
            try:
                options = normalize_options(entry.options)
            except VariantError as exc:
                raise Invalid(f"{where}: {exc}") from None
            if options and stand_in:
                raise Invalid(STAND_IN_REFUSES.format(n=n, config=entry.gpu_config))
            if options:
                known = await self._known(locate, accelsim, entry.gpu_config)
                types = await self.option_types(accelsim or tree)  # the sources' table, even unbuilt
                for name, value in options.items():
                    if name not in known:
                        raise Invalid(
                            f"{where}: option {quoted(name)} is not one {entry.gpu_config}'s config or the simulator "
                            f"knows; GET /api/gpu-configs/{entry.gpu_config}/options lists them"
                        )
                    if (kind := types.get(name)) and (problem := typed_value_problem(name, value, kind)):
                        raise Invalid(f"{where}: {problem}")
            # The automatic label is not a user's label: a run's own entries carry it (rerun and
            # retry create from them), and it may be longer than a user's may be.
            automatic = default_label(entry.gpu_config, options) if options else None
            if (
                entry.label is not None
                and entry.label != automatic
                and (problem := label_problem(entry.label))
            ):
                raise Invalid(f"{where}: {problem}")
            key = options_key(entry.gpu_config, options)
            if key in seen_variants:
                what = "with the same options" if options else "without options"
                raise Invalid(
                    f"gpu_config {quoted(entry.gpu_config)} appears in entries {seen_variants[key]} and {n} {what}; "
                    "raise its count instead"
                )
            seen_variants[key] = n
            label = entry.label or automatic
            variant = label or entry.gpu_config
            if variant in seen_labels:
                raise Invalid(f"entries {seen_labels[variant]} and {n} have the same label {quoted(variant)}")
            seen_labels[variant] = n
            out.append(entry.model_copy(update={"options": options, "label": label}))  # shards kept
        return out

    async def _known(self, locate: Locate, accelsim: Path | None, name: str) -> set[str]:
        config = locate(name)
        if config is None:
            return set()
        known = set(self.config_files(config))
        echo = await self.simulator_echo(accelsim, config)
        if echo:
            known |= set(echo)
        return known


def probe(accelsim: Path, config: ConfigFiles) -> dict[str, OptionInfo] | None:
    """The simulator's option echo on `config` (None when it printed none)."""
    result = config_probe.probe(accelsim, config)
    if not result.options:
        log.warning(
            "accel-sim.out printed no options for %s: %s", config.name, result.complaint or "no output"
        )
        return None
    return result.options
