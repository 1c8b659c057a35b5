"""AccelWattch's power report, read as it grows. Pure: text in, values out.

With `-power_simulation_enabled 1`, GPGPU-Sim writes `accelwattch_power_report.log` in its working
directory, one block per finished kernel (gpgpu_sim_wrapper::print_power_kernel_stats), flushed
whole at the block's end:

    kernel_name = _Z16embedding_kernelPKiPK6float4S3_PS1_ii
    kernel_launch_uid = 1

    Kernel Average Power Data:
    kernel_avg_power = 57.2549
    gpu_avg_IBP, = 0.00191644          <- a power component, in W (AccelWattch's labels keep
    ...                                   their trailing comma)
    gpu_avg_TOT_INST, = 144            <- a performance counter, not power
    ...
    Kernel Maximum Power Data:
    kernel_max_power = 70.9738
    ...
    Kernel Minimum Power Data:
    kernel_min_power = 55.4988
    ...
    gpu_tot_min_power = 55.4988        <- the block's last line

A block counts once its last line came: a simulator killed mid-block leaves a block that is never
read (its kernel has no power, and says so), never a wrong one. A block whose values do not read
as finite numbers is skipped too. The components are AccelWattch's power components
(POWER_COMPONENTS, from the pinned sources' `pwr_cmp_label`); they add up to the average power.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REPORT_NAME = "accelwattch_power_report.log"
# The options that turn AccelWattch on with a config's own model, run from a folder holding it.
MODEL_FILE = "accelwattch_sass_sim.xml"
POWER_OPTIONS = {"-power_simulation_enabled": "1", "-accelwattch_xml_file": MODEL_FILE}

# AccelWattch's power components (gpgpu_sim_wrapper.cc `pwr_cmp_label`), in its order.
POWER_COMPONENTS = (
    "IBP ICP DCP TCP CCP SHRDP RFP INTP FPUP DPUP INT_MUL24P INT_MUL32P INT_MULP INT_DIVP FP_MULP "
    "FP_DIVP FP_SQRTP FP_LGP FP_SINP FP_EXP DP_MULP DP_DIVP TENSORP TEXP SCHEDP L2CP MCP NOCP DRAMP "
    "PIPEP IDLE_COREP CONSTP STATICP"
).split()
_COMPONENTS = frozenset(POWER_COMPONENTS)

_FIRST = "kernel_name = "
_LAST = "gpu_tot_min_power = "
# A line longer than this is no line of a report (a garbled file): the reader skips it. A block
# of more lines than MAX_BLOCK_LINES (real ones have about 300) never ends: it is dropped.
MAX_LINE = 8_192
MAX_BLOCK_LINES = 5_000
# Watts a figure may hold: any GPU draws well under this; a figure past it (or below 0) is no
# figure AccelWattch writes, and its block is skipped.
MAX_WATTS = 100_000.0
# A number as C++'s `<<` writes a double: ASCII digits only (Python's float() also takes `1_000`
# and other scripts' digits, which no simulator writes).
NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class KernelPowerBlock:
    """One kernel's power, as AccelWattch reported it (W)."""

    uid: int  # kernel_launch_uid: the kernel's place in its simulator's list, from 1
    name: str
    avg_w: float
    max_w: float
    min_w: float
    components: dict[str, float] = field(default_factory=dict)  # average W per component


def watts(text: str) -> float | None:
    """A figure in W as AccelWattch writes it, within 0 to MAX_WATTS; else None."""
    if not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if 0.0 <= value <= MAX_WATTS else None


def read_block(lines: list[str]) -> KernelPowerBlock | None:
    """A whole block's lines (from `kernel_name = ` to `gpu_tot_min_power = `); None when it does
    not hold a kernel's uid and its average, maximum and minimum power as finite numbers."""
    values: dict[str, str] = {}
    components: dict[str, float] = {}
    for line in lines:
        key, sep, value = line.partition(" = ")
        if not sep:
            continue
        key, value = key.strip().rstrip(","), value.strip()
        if key.startswith("gpu_avg_") and key[8:] in _COMPONENTS:
            if (figure := watts(value)) is not None:
                components[key[8:]] = figure
        else:
            values.setdefault(key, value)
    uid = values.get("kernel_launch_uid", "")
    avg, peak, low = (watts(values.get(f"kernel_{k}_power", "")) for k in ("avg", "max", "min"))
    # isdigit() alone takes `²`, which int() refuses
    if not (uid.isascii() and uid.isdigit()) or len(uid) > 12 or avg is None or peak is None or low is None:
        return None
    return KernelPowerBlock(int(uid), values.get("kernel_name", ""), avg, peak, low, components)


class PowerReportReader:
    """Fed the report's bytes as they are appended; gives each block once it is whole."""

    def __init__(self) -> None:
        self._partial = b""  # a line not yet ended
        self._block: list[str] | None = None
        self.skipped = 0  # whole blocks that did not read (garbled)

    def feed(self, data: bytes) -> list[KernelPowerBlock]:
        text = self._partial + data
        *whole, self._partial = text.split(b"\n")
        if len(self._partial) > MAX_LINE:
            self._partial = b""
        done: list[KernelPowerBlock] = []
        for raw in whole:
            if len(raw) > MAX_LINE:
                continue
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if line.startswith(_FIRST):
                self._block = [line]  # a block not ended before the next began was cut off
            elif self._block is not None:
                self._block.append(line)
                if len(self._block) > MAX_BLOCK_LINES:
                    self._block = None
                    self.skipped += 1
                elif line.startswith(_LAST):
                    block = read_block(self._block)
                    self._block = None
                    if block is None:
                        self.skipped += 1
                    else:
                        done.append(block)
        return done
