"""A power sim's AccelWattch report, read as it grows, simulator after simulator (issue 34).

Each simulator writes `accelwattch_power_report.log` in its working directory, anew (it truncates
the file when it starts): one block per kernel it finished, keyed by `kernel_launch_uid`, its place
in that simulator's own list. The worker turns each block into a note in the sim's log
(cascade_core/log_notes.py) at the kernel's trace position, once the kernel's stats block has
passed in the output (the kernel watch says so), so the server places it after the kernel's stats.
A warm-up kernel's power is dropped, as its stats are. When a simulator ends, the kernels of the
sim it finished without a whole block get a note saying their power is missing. The report of
every simulator, one after the other, is the file the sim uploads.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from cascade_core import log_notes
from cascade_core.power_report import REPORT_NAME, KernelPowerBlock, PowerReportReader

from .kernel_watch import KernelWatch

log = logging.getLogger("cascade_worker")

READ_AT_ONCE = 1 << 20


class PowerTail:
    def __init__(self, run_dir: Path, keep: Path) -> None:
        """`run_dir`: where the simulators write their reports; `keep`: a folder for the reports of
        the simulators that ended, each moved there whole (outside run_dir: each simulator
        truncates its own; a move needs no disk space, so a full disk loses none of them)."""
        self.report = run_dir / REPORT_NAME
        self.keep = keep
        self._kept: list[Path] = []
        self._begin()

    def _begin(self) -> None:
        self._reader = PowerReportReader()
        self._offset = 0
        self._waiting: dict[int, KernelPowerBlock] = {}  # uid -> block whose stats have not passed
        self._noted: set[int] = set()  # trace positions whose power is in the log

    def start(self) -> None:
        """A new simulator starts (its report starts empty)."""
        self._begin()

    def poll(self, watch: KernelWatch, owns: Callable[[int], bool]) -> list[str]:
        """The notes of the blocks that came (and of those that waited for their kernel's stats)."""
        try:
            with open(self.report, "rb") as report:
                report.seek(self._offset)
                while data := report.read(READ_AT_ONCE):
                    self._offset += len(data)
                    for block in self._reader.feed(data):
                        if 1 <= block.uid <= len(watch.positions):  # else no kernel of this list
                            self._waiting[block.uid] = block
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:  # a nicety: the sim's cycles never depend on it
            log.warning("cannot read the power report: %s", exc)
            return []
        notes = []
        for uid in sorted(self._waiting):
            if not watch.finished_uid(uid):
                continue
            block = self._waiting.pop(uid)
            position = watch.positions[uid - 1]
            if owns(position) and position not in self._noted:
                self._noted.add(position)
                components = tuple(block.components.items())
                notes.append(
                    log_notes.power_line(
                        log_notes.KernelPowerNote(position, block.avg_w, block.max_w, block.min_w, components)
                    )
                )
        return notes

    def end(self, watch: KernelWatch, owns: Callable[[int], bool]) -> list[str]:
        """The simulator ended: its last notes, and which of its kernels have no power; its report
        goes after the earlier simulators' in `keep`."""
        notes = self.poll(watch, owns)
        missing = sorted(p for p in watch.finished_positions() if owns(p) and p not in self._noted)
        if missing:
            why = (
                "the power report has no whole block for "
                + ("it" if len(missing) == 1 else "them")
                + (f" ({self._reader.skipped} garbled)" if self._reader.skipped else "")
                if self.report.exists()
                else "the simulator wrote no power report"
            )
            notes.append(log_notes.no_power_line(missing, why))
        try:
            if self.report.exists():
                self.keep.mkdir(parents=True, exist_ok=True)
                kept = self.keep / f"{len(self._kept)}.log"
                os.replace(self.report, kept)
                self._kept.append(kept)
        except OSError as exc:
            log.warning("cannot keep the power report: %s", exc)
        return notes

    def finish(self) -> None:
        """The sim's whole report, every simulator's one after the other, where its files are
        uploaded from; on a disk too full to join them, each simulator's report as a file of its
        own (`accelwattch_power_report.restart-N.log` after the first)."""
        if not self._kept:
            return
        try:
            with open(self.report, "wb") as whole:
                for part in self._kept:
                    with open(part, "rb") as report:
                        while data := report.read(READ_AT_ONCE):
                            whole.write(data)
            return
        except OSError as exc:
            log.warning("cannot join the power reports (%s): uploading each on its own", exc)
        for number, part in enumerate(self._kept):
            name = REPORT_NAME if number == 0 else REPORT_NAME.replace(".log", f".restart-{number}.log")
            try:
                os.replace(part, self.report.with_name(name))
            except OSError as exc:
                log.warning("cannot keep the power report: %s", exc)
