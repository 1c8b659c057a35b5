"""Issue 31, the pure parts: which trace archs a simulator's sources take and the straight answer
for one they do not; what a gpgpusim.config says (clock, arch); the rules an added config keeps;
the simulator's verdict on a config from its output."""

from __future__ import annotations

import pytest

from cascade_core.added_configs import add_problem, config_file_names, describe
from cascade_core.arch_support import binary_versions, gpus_of, sort_archs, unsupported_arch_problem
from cascade_core.config_probe import verdict
from cascade_core.gpu_config_text import arch_from_name, parse_gpgpusim_config
from cascade_core.models import GpuConfig, GpuConfigAdd

# As the pinned accel-sim-framework has them (gpu-simulator/ISA_Def/*_opcode.h, trace_driven.cc).
PINNED_HEADERS = {
    "ampere_opcode.h": "#define AMPERE_RTX_BINART_VERSION 86\n#define AMPERE_A100_BINART_VERSION 80\n",
    "volta_opcode.h": "#define VOLTA_BINART_VERSION 70\n",
    "pascal_opcode.h": "#define PASCAL_TITANX_BINART_VERSION 61\n#define PASCAL_P100_BINART_VERSION 60\n",
    "kepler_opcode.h": "#define KEPLER_BINART_VERSION 35\n",
    "turing_opcode.h": "#define TURING_BINART_VERSION 75\n",
}
PINNED_DISPATCH = """
  if (kernel_trace_info->binary_verion == AMPERE_RTX_BINART_VERSION ||
      kernel_trace_info->binary_verion == AMPERE_A100_BINART_VERSION)
    OpcodeMap = &Ampere_OpcodeMap;
  else if (kernel_trace_info->binary_verion == VOLTA_BINART_VERSION)
    OpcodeMap = &Volta_OpcodeMap;
  else if (kernel_trace_info->binary_verion == PASCAL_TITANX_BINART_VERSION ||
           kernel_trace_info->binary_verion == PASCAL_P100_BINART_VERSION)
    OpcodeMap = &Pascal_OpcodeMap;
  else if (kernel_trace_info->binary_verion == KEPLER_BINART_VERSION)
    OpcodeMap = &Kepler_OpcodeMap;
  else if (kernel_trace_info->binary_verion == TURING_BINART_VERSION)
    OpcodeMap = &Turing_OpcodeMap;
  else {
    printf("unsupported binary version: %d\\n", kernel_trace_info->binary_verion);
"""
PINNED_ARCHS = ["sm_35", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86"]


def test_the_binary_versions_are_the_macros_the_dispatch_compares_with():
    archs = sort_archs(f"sm_{v}" for v in binary_versions(PINNED_HEADERS, PINNED_DISPATCH))
    assert archs == PINNED_ARCHS
    # a header defining a version the dispatch never compares with brings no arch
    hopper = {**PINNED_HEADERS, "hopper_opcode.h": "#define HOPPER_H100_BINART_VERSION 90\n"}
    assert 90 not in binary_versions(hopper, PINNED_DISPATCH)
    newer = PINNED_DISPATCH + "else if (v == HOPPER_H100_BINART_VERSION) OpcodeMap = &Hopper_OpcodeMap;"
    assert 90 in binary_versions(hopper, newer)
    assert binary_versions(hopper, None) == {35, 60, 61, 70, 75, 80, 86, 90}  # no dispatch file: every one
    assert sort_archs(["sm_100", "sm_90", "sm_35"]) == ["sm_35", "sm_90", "sm_100"]


def test_the_straight_answer_names_the_gpus_the_simulator_and_what_to_do():
    problem = unsupported_arch_problem("sm_89", PINNED_ARCHS, "l4-trace")
    assert problem is not None
    assert problem.startswith("trace l4-trace is sm_89 (Ada Lovelace: RTX 4060-4090, L4, L40), which the ")
    assert "no opcodes for binary version 89" in problem and "unsupported binary version" in problem
    assert "it knows sm_35, sm_60, sm_61, sm_70, sm_75, sm_80, sm_86" in problem
    assert "cascade simulator install --framework PATH --gpgpu-sim PATH" in problem
    assert unsupported_arch_problem("sm_80", PINNED_ARCHS) is None
    assert unsupported_arch_problem("sm_90", None) is None  # the stand-in, or unknown: no claim
    assert unsupported_arch_problem("unknown", PINNED_ARCHS) is None
    assert gpus_of("sm_90") == "Hopper: H100, H200, GH200" and gpus_of("sm_999") == "sm_999"


@pytest.mark.parametrize(
    ("name", "text", "arch", "expected"),
    [
        ("SM7_QV100", "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n", None, ("sm_70", 1132.0)),
        (
            "SM6_TITANX",
            "-gpgpu_compute_capability_major 6\n-gpgpu_compute_capability_minor 1\n"
            "-gpgpu_clock_domains 1417:1:1:1\n",
            None,
            ("sm_61", 1417.0),
        ),
        ("X", "-gpgpu_clock_domains 1410:1:1:1\n", "sm_80", ("sm_80", 1410.0)),
        ("SM75_X", "-gpgpu_clock_domains 1:1:1:1\n-gpgpu_clock_domains 2:1:1:1\n", None, ("sm_75", 2.0)),
        ("X", "-gpgpu_clock_domains 1410:1:1:1\n", None, None),  # no arch anywhere
        ("SM80_X", "-gpgpu_n_clusters 4\n", None, None),  # no clock
        ("SM80_X", "-gpgpu_clock_domains 0:1:1:1\n", None, None),
    ],
)
def test_a_gpgpusim_config_gives_its_clock_and_arch(name, text, arch, expected):
    config = parse_gpgpusim_config(text, name, arch=arch)
    assert (config.arch, config.core_clock_mhz) == expected if expected else config is None
    assert arch_from_name("SM100_B200") == "sm_100" and arch_from_name("A100") is None


def test_an_added_config_takes_its_config_files_and_leaves_the_rest():
    taken, left = config_file_names(
        [
            "gpgpusim.config",
            "trace.config",
            "config_ampere_islip.icnt",
            "accelwattch_sass_sim.xml",
            "hw_perf.csv",
            "README.md",
            ".hidden.icnt",
            "run.sh",
        ]
    )
    assert taken == [
        "accelwattch_sass_sim.xml",
        "config_ampere_islip.icnt",
        "gpgpusim.config",
        "hw_perf.csv",
        "trace.config",
    ]
    assert left == [".hidden.icnt", "README.md", "run.sh"]


TRACE = "-trace_opcode_latency_initiation_int 4,2\n"


def test_an_added_config_that_names_its_interconnect_file_must_bring_it():
    text = "-gpgpu_clock_domains 1:1:1:1\n-network_mode 1\n-inter_config_file config_x.icnt\n"
    lacking = GpuConfigAdd(name="SM80_X", files={"gpgpusim.config": text, "trace.config": TRACE})
    assert add_problem(lacking) == (
        "gpgpusim.config names 'config_x.icnt' (-inter_config_file), which is not among the config's files"
    )
    brought = GpuConfigAdd(
        name="SM80_X", files={"gpgpusim.config": text, "config_x.icnt": "x\n", "trace.config": TRACE}
    )
    assert add_problem(brought) is None
    # the local crossbar (network mode 2) reads no file: the name in a comment-like leftover is fine
    local = GpuConfigAdd(
        name="SM80_X", files={"gpgpusim.config": text.replace("mode 1", "mode 2"), "trace.config": TRACE}
    )
    # without trace.config the trace-driven simulator fails every kernel: refused, saying where it is
    alone = GpuConfigAdd(name="SM80_X", files={"gpgpusim.config": text.replace("mode 1", "mode 2")})
    assert "a config needs a trace.config beside its gpgpusim.config" in (add_problem(alone) or "")
    # three clocks (no DRAM clock) deadlock every kernel: refused
    three = local.model_copy(
        update={"files": {**local.files, "gpgpusim.config": "-gpgpu_clock_domains 1:1:1\n"}}
    )
    assert "must give four clocks" in (add_problem(three) or "")
    assert add_problem(local) is None
    assert describe(brought) == GpuConfig(name="SM80_X", arch="sm_80", core_clock_mhz=1.0, added=True)


def test_a_lone_surrogate_is_no_text():
    body = GpuConfigAdd(name="SM80_X", files={"gpgpusim.config": "-gpgpu_clock_domains 1:1:1:1\n\ud800"})
    assert add_problem(body) == "gpgpusim.config is not text: config files are UTF-8 (or ASCII) text"


def test_the_simulators_verdict_on_a_config_is_read_from_its_output():
    assert verdict(
        1, "GPGPU-Sim uArch: performance model initialization complete.\nUnable to open file: x"
    ) == (
        True,
        "",
    )
    refused = "\n\nGPGPU-Sim ** ERROR: Unknown Option: '-gpgpu_no_such_option' \nAccel-Sim [build x]\n"
    assert verdict(1, refused) == (
        False,
        "GPGPU-Sim ** ERROR: Unknown Option: '-gpgpu_no_such_option' (exit status 1)",
    )
    assert verdict(134, "a\nb\nc\nd\n") == (False, "b; c; d (exit status 134)")
    assert verdict(None, "") == (False, "no output")


def test_an_interconnect_file_may_name_no_file_outside_the_configs_folder():
    """BookSim opens `watch_out` (and other options) as files to write, while the simulator checks
    the config: a path there would let an added config create or empty any file."""
    text = "-gpgpu_clock_domains 1:1:1:1\n-network_mode 1\n-inter_config_file config_x.icnt\n"
    for icnt in ("watch_out = /tmp/victim;\n", "k = 1; stats_out = ..\\\\x;\n", "watch_file = a/b; // x\n"):
        body = GpuConfigAdd(
            name="SM80_X", files={"gpgpusim.config": text, "config_x.icnt": icnt, "trace.config": TRACE}
        )
        assert "config_x.icnt: " in (add_problem(body) or ""), icnt
        assert "no '/'" in (add_problem(body) or "")
    fine = "// routing: a/b comments are fine\nflit_size = 40;\nwatch_out = -;\n"
    body = GpuConfigAdd(
        name="SM80_X", files={"gpgpusim.config": text, "config_x.icnt": fine, "trace.config": TRACE}
    )
    assert add_problem(body) is None


def test_the_simulators_check_of_a_config_is_bounded_in_memory():
    """A config whose model needs gigabytes (`-gpgpu_n_mem 5000`) must not take the server's
    memory while the simulator checks it: the check's process is capped."""
    import subprocess
    import sys

    from cascade_core.config_probe import PROBE_MEMORY_BYTES, _bounded_child

    grab = f"b = bytearray({PROBE_MEMORY_BYTES + (1 << 30)})"
    done = subprocess.run(
        [sys.executable, "-c", grab], preexec_fn=_bounded_child(), capture_output=True, timeout=60
    )
    assert done.returncode != 0 and b"MemoryError" in done.stderr


def test_cascade_configs_add_never_follows_a_link(tmp_path):
    """`leak.csv -> /etc/passwd` in a config's folder is left out, saying why: the files sent are
    the folder's own."""
    from cascade_tui.scripting.configs_command import read_config_dir

    folder = tmp_path / "SM80_LAB"
    folder.mkdir()
    (folder / "gpgpusim.config").write_text("-gpgpu_clock_domains 1410:1410:1410:1410\n")
    (folder / "trace.config").write_text(TRACE)
    (folder / "leak.csv").symlink_to("/etc/passwd")
    (folder / "trace2.config").symlink_to(folder / "trace.config")
    body, left = read_config_dir(folder, None, None)
    assert sorted(body.files) == ["gpgpusim.config", "trace.config"]
    assert "leak.csv (a link: copy the file itself)" in left
