"""Fake simulators for the worker's tests, installed like a real Accel-Sim."""

from __future__ import annotations

import dataclasses
import stat
import sys
from pathlib import Path
from typing import Any

from cascade_core import simulator_layout as layout

FAKE = Path(__file__).with_name("accel_sim_fake.py")
BINARY = Path("gpu-simulator/bin/release/accel-sim.out")
TESTED_CFGS = Path("gpu-simulator/gpgpu-sim/configs/tested-cfgs")
TRACE_CFGS = Path("gpu-simulator/configs/tested-cfgs")


def install_fake_accelsim(root: Path, configs: dict[str, dict[str, str]]) -> Path:
    """A fake Accel-Sim dir at `root`: the fake binary and one sm_70 config per entry, whose
    options (e.g. {"fake_behaviour": "deadlock"}) go into its gpgpusim.config."""
    binary = root / BINARY
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for name, options in configs.items():
        cfg = root / TESTED_CFGS / name
        cfg.mkdir(parents=True, exist_ok=True)
        lines = [
            "-gpgpu_compute_capability_major 7",
            "-gpgpu_compute_capability_minor 0",
            "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0",
        ]
        lines += [f"-{key} {value}" for key, value in options.items()]
        (cfg / "gpgpusim.config").write_text("\n".join(lines) + "\n")
        if "fake_power" in options:  # a config with an AccelWattch model (the fake reads none)
            (cfg / "accelwattch_sass_sim.xml").write_text("<component id='root'/>\n")
        (root / TRACE_CFGS / name).mkdir(parents=True, exist_ok=True)
        (root / TRACE_CFGS / name / "trace.config").write_text("-trace_opcode_latency_initiation_int 4,2\n")
    return root


def make_trace_dir(trace_dir: Path) -> Path:
    (trace_dir / "traces").mkdir(parents=True, exist_ok=True)
    (trace_dir / "traces" / "kernelslist.g").write_text("kernel-1.traceg\n")
    return trace_dir


def write_opcode_headers(root: Path, versions: dict[str, int]) -> Path:
    """Accel-Sim's opcode headers as its sources have them (`#define VOLTA_BINART_VERSION 70` in
    `ISA_Def/volta_opcode.h`) and the trace parser's dispatch naming each: what tells which trace
    archs a simulator runs."""
    isa = root / "gpu-simulator" / "ISA_Def"
    isa.mkdir(parents=True, exist_ok=True)
    dispatch = []
    for family, version in versions.items():
        macro = f"{family.upper()}_BINART_VERSION"
        (isa / f"{family}_opcode.h").write_text(f"#ifndef X\n#define {macro} {version}\n#endif\n")
        dispatch.append(f"if (kernel_trace_info->binary_verion == {macro}) OpcodeMap = &{family}_OpcodeMap;")
    driven = root / "gpu-simulator" / "trace-driven" / "trace_driven.cc"
    driven.parent.mkdir(parents=True, exist_ok=True)
    driven.write_text("\n".join(dispatch) + '\nelse { printf("unsupported binary version: %d\\n"); }\n')
    return root


_MANIFEST = layout.Manifest(
    key="",
    framework_commit="73f9",
    gpgpu_sim_commit="6678",
    framework_source="f",
    gpgpu_sim_source="g",
    built_at="2026-11-30T19:48:46+00:00",
    build_seconds=1.0,
    smoke_passed=True,
    smoke_detail="2 kernels",
)


def build_manifest(key: str, **fields: Any) -> layout.Manifest:
    """The manifest `cascade simulator install` writes for build `key` (made-up sources, commits
    and times; `fields` say otherwise)."""
    return dataclasses.replace(_MANIFEST, key=key, **fields)
