"""A fake `accel-sim.out` that prints and ends the way the real one does in each situation.

Installed by `install_fake_accelsim()` as `gpu-simulator/bin/release/accel-sim.out` of a fake
Accel-Sim directory. What it does comes from `-fake_behaviour <name>` in the `./gpgpusim.config`
the worker copied into its working directory (so every tested config dir picks a behaviour);
the messages are the real ones from reference/accelsim-formats.md section 1.5. An option named
`-unknown_...` is refused as the real one refuses an option it does not know.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

EXIT_LINES = ["GPGPU-Sim: *** simulation thread exiting ***", "GPGPU-Sim: *** exit detected ***"]
# What `-gpgpu_runtime_stat 1:15` prints every cycle, two lines of it.
PERIODIC = (
    "n_cmd=1234 n_nop=5678 n_act=12 n_pre=11 n_ref_event=0 n_req=34 n_rd=30 n_write=4 bw_util=0.01\n"
    "GPGPU-Sim uArch: cycles simulated: 2000  inst.: 46080 (ipc=23.0) sim_rate=46080 (inst/sec)\n"
)


def kernel_block(uid: int) -> list[str]:
    return [
        f"launching kernel name: _Z6kernel{uid}v uid: {uid} cuda_stream_id: 0",
        "thread block = 0,0,0",
        f"kernel_name = _Z6kernel{uid}v ",
        f"kernel_launch_uid = {uid} ",
        "gpu_sim_cycle = 1000",
        "gpu_sim_insn = 5000",
        "gpu_ipc =       5.0000",
        f"gpu_tot_sim_cycle = {1000 * uid}",
        f"gpu_tot_sim_insn = {5000 * uid}",
        "gpu_tot_ipc =       5.0000",
        "",
        "",
        "gpgpu_simulation_time = 0 days, 0 hrs, 0 min, 1 sec (1 sec)",
        "gpgpu_simulation_rate = 5000 (inst/sec)",
        "gpgpu_simulation_rate = 1000 (cycle/sec)",
        "gpgpu_silicon_slowdown = 1132000x",
    ]


POWER_REPORT = "accelwattch_power_report.log"
POWER_COMPONENTS = {"DRAMP": 0.75, "IDLE_COREP": 20.0, "CONSTP": 32.25, "STATICP": 1.25}


def kernel_power(number: int) -> float:
    """The fake's average power for the kernel of trace file `kernel-<number>.traceg`, W."""
    return sum(POWER_COMPONENTS.values()) + number


def power_block(uid: int, number: int) -> str:
    """AccelWattch's block for a kernel, as the real one writes it (components with their comma)."""
    extra = {"RFP": float(number)}
    lines = [
        f"kernel_name = _Z6kernel{number}v ",
        f"kernel_launch_uid = {uid} ",
        "",
        "Kernel Average Power Data:",
        f"kernel_avg_power = {kernel_power(number):g}",
        *[f"gpu_avg_{name}, = {value:g}" for name, value in {**extra, **POWER_COMPONENTS}.items()],
        "gpu_avg_TOT_INST, = 144",
        "",
        "Kernel Maximum Power Data:",
        f"kernel_max_power = {kernel_power(number) + 10:g}",
        "",
        "Kernel Minimum Power Data:",
        f"kernel_min_power = {kernel_power(number) - 5:g}",
        "",
        "Accumulative Power Statistics Over Previous Kernels:",
        "gpu_tot_avg_power = 50",
        "gpu_tot_max_power = 70",
        "gpu_tot_min_power = 40",
        "",
        "",
    ]
    return "\n".join(lines)


def write_power(line: str, uid: int, number: int, options: dict[str, str]) -> None:
    """With -power_simulation_enabled 1: the kernel's block, appended; `-fake_power cut:<file>`
    stops mid-block there (a simulator killed mid-write), `garble:<file>` writes a block whose
    figures do not read."""
    if options.get("power_simulation_enabled") != "1":
        return
    block = power_block(uid, number)
    how = options.get("fake_power", "ok")
    if how == f"cut:{line}":
        block = block[: block.index("Kernel Maximum")]
    elif how == f"garble:{line}":
        block = block.replace(f"kernel_avg_power = {kernel_power(number):g}", "kernel_avg_power = -nan(ind)x")
    with open(POWER_REPORT, "a") as report:
        report.write(block)


def allocate(megabytes: int) -> None:
    """Take `megabytes` of memory, touched, as the real one's `new` does for its GPU model; past
    the memory limit, the real one's words and its abort."""
    held = []
    try:
        for _ in range(megabytes):
            held.append(bytearray(2**20))
    except MemoryError:
        del held
        say(
            "terminate called after throwing an instance of 'std::bad_alloc'",
            "  what():  std::bad_alloc",
            stream=sys.stderr,
        )
        os.abort()


def spin(cpu_seconds: float) -> None:
    """Use this much CPU time (a long kernel)."""
    end = time.process_time() + cpu_seconds
    while time.process_time() < end:
        pass


def run_list(kernelslist: Path, fail_on: list[str], seconds: float, options: dict[str, str]) -> int:
    """Each kernel of the list in order, as the real one prints them; a kernel whose file is in
    `fail_on` (or any, with `all`; `hang:<file>` hangs there) aborts with Accel-Sim's assertion."""
    uid = 0
    if options.get("power_simulation_enabled") == "1":
        Path(POWER_REPORT).write_text("")  # each simulator's report starts anew, as the real one's
    for line in kernelslist.read_text().split("\n"):
        if line.startswith("MemcpyHtoD"):
            say(f"launching memcpy command : {line}")
        if not line.startswith("kernel"):
            continue
        uid += 1
        if f"spin:{line}" in fail_on:  # stuck before this kernel, as on a memcpy it cannot end
            say("launching memcpy command : MemcpyHtoD,0x00007f0000000000,99999999999999")
            time.sleep(120)
            return 3
        say(
            f"Processing kernel {kernelslist.parent / line}",
            f"Header info loaded for kernel command : {line}",
        )
        time.sleep(seconds)
        if line == options.get("fake_alloc_on"):  # this kernel's model takes all the memory it can
            say(f"launching kernel name: _Z6kernel{uid}v uid: {uid} cuda_stream_id: 0")
            allocate(1_000_000)
        spin(float(options.get("fake_spin_s", "0")))
        if f"hang:{line}" in fail_on:
            say(f"launching kernel name: _Z6kernel{uid}v uid: {uid} cuda_stream_id: 0")
            time.sleep(120)  # long past any test's wall limit, never for ever (a test that failed)
            return 3
        if line in fail_on or "all" in fail_on:
            # a named kernel is the trace's reduce kernel; with `all`, every kernel its own
            name = "_Z6reducev" if line in fail_on else f"_Z6kernel{''.join(c for c in line if c.isdigit())}v"
            say(f"launching kernel name: {name} uid: {uid} cuda_stream_id: 0", "thread block = 0,0,0")
            say(
                "accel-sim.out: shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): "
                "Assertion `active.any() == false' failed.",
                stream=sys.stderr,
            )
            os.abort()
        block = kernel_block(uid)
        # the kernel's own cycles, by its trace file, so a test tells the kernels apart
        number = int("".join(c for c in line if c.isdigit()) or 0)
        write_power(line, uid, number, options)  # the report is flushed before stdout's block
        block = [x.replace(f"_Z6kernel{uid}v", f"_Z6kernel{number}v") for x in block]
        say(*[f"gpu_sim_cycle = {1000 + number}" if x.startswith("gpu_sim_cycle") else x for x in block])
    say(*EXIT_LINES)
    return 0


def say(*lines: str, stream=sys.stdout) -> None:
    for line in lines:
        print(line, file=stream)
    stream.flush()


def main(argv: list[str]) -> int:
    # Python ignores SIGXFSZ; the real simulator (C++) dies of it past the file size limit.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    if "-trace" not in argv[:-1] or "-config" not in argv:
        say("usage: accel-sim.out -trace <kernelslist.g> -config <file> ...", stream=sys.stderr)
        return 1
    trace = argv[argv.index("-trace") + 1]
    configs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-config"]
    for config in configs:
        if not Path(config).is_file():
            say(f"GPGPU-Sim ** ERROR: Cannot open config file '{config}'", stream=sys.stderr)
            return 1
    options = {}
    for line in Path("gpgpusim.config").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("-"):
            options[parts[0][1:]] = parts[1]
    # The command line's options after the configs win, as the real one's do.
    after = argv[max(i for i, arg in enumerate(argv) if arg == "-config") + 2 :]
    for name, value in zip(after[::2], after[1::2]):
        if name.startswith("-"):
            options[name[1:]] = value
    # An option the real simulator does not register is refused before anything else, in its words.
    if unknown := [name for name in options if name.startswith("unknown_")]:
        say("", "", f"GPGPU-Sim ** ERROR: Unknown Option: '-{unknown[0]}' ")
        return 1
    behaviour = options.get("fake_behaviour", "ok")
    kernels = int(options.get("fake_kernels", "2"))
    say(
        "Accel-Sim [build accelsim-commit-fake_modified_0.0]",
        "",
        "GPGPU-Sim: Configuration options:",
        "",
        *[f"-{k} {v}" for k, v in options.items()],
        "GPGPU-Sim uArch: performance model initialization complete.",
    )
    if not Path(trace).is_file():  # as the real one: after its option echo (the options probe)
        say(f"Unable to open file: {trace}")
        return 1
    if behaviour == "unsupported":
        say("unsupported binary version: 95")
        return 0
    if behaviour == "env":  # its own environment and its worker's, as files the worker uploads
        Path("environ.json").write_text(json.dumps(dict(os.environ)))
        worker = Path(f"/proc/{os.getppid()}/environ").read_bytes().split(b"\0")
        pairs = [item.decode().partition("=") for item in worker if item]
        Path("worker-environ.json").write_text(json.dumps({k: v for k, _, v in pairs}))
        behaviour = "ok"
    if behaviour == "hang":
        say(*kernel_block(1))
        while True:
            time.sleep(1)
    if "fake_fail_on" in options:  # the list's kernels, failing on the named ones (issue 30)
        return run_list(
            Path(argv[1]),
            options["fake_fail_on"].split(","),
            float(options.get("fake_kernel_s", "0")),
            options,
        )
    if behaviour == "alloc":  # a model too big for the memory limit (-gpgpu_n_clusters 400)
        allocate(int(options.get("fake_alloc_mb", "1000000")))
        behaviour = "ok"
    if behaviour == "spin":  # a kernel that runs until the CPU time limit
        say("launching kernel name: _Z6kernel1v uid: 1 cuda_stream_id: 0")
        spin(1e9)
    if behaviour == "big_file":  # a file past the file size limit, as -visualizer_enabled writes one
        with open("gpgpusim_visualizer__fake.log", "wb") as out:
            for _ in range(int(options.get("fake_file_mb", "100"))):
                out.write(b"x" * 2**20)
        behaviour = "ok"
    spew = int(options.get("fake_spew_lines", "0"))  # periodic lines while each kernel runs
    for uid in range(1, kernels + 1):
        block = kernel_block(uid)
        say(block[0])
        if spew:
            sys.stdout.write(PERIODIC * (spew // 2))
        say(*block[1:])
    if behaviour == "spew_forever":  # `-gpgpu_runtime_stat 1:15` on a kernel that runs for long
        while True:
            sys.stdout.write(PERIODIC * 1000)
    Path("gpgpu_inst_stats.txt").write_text("kernel line : count latency dram_traffic\n")
    if behaviour == "ok":
        say(*EXIT_LINES)
        return 0
    if behaviour == "no_exit_line":
        return 0
    if behaviour == "deadlock":
        say(
            "",
            "",
            "GPGPU-Sim uArch: ERROR ** deadlock detected: last writeback core 3 @ gpu_sim_cycle 1000 "
            "(+ gpu_tot_sim_cycle 2000) (50000 cycles ago)",
            "GPGPU-Sim uArch: DEADLOCK  shader cores no longer committing instructions [core(# threads)]:",
            "Re-run the simulator in gdb and use debug routines in .gdbinit to debug this",
        )
        os.abort()
    if behaviour == "assertion":
        say(
            "accel-sim.out: trace_parser.cc:410: void trace_parser::parse(): "
            "Assertion `reg_dsts_num <= MAX_DST' failed.",
            stream=sys.stderr,
        )
        os.abort()
    if behaviour in ("SIGSEGV", "SIGKILL", "SIGABRT"):
        os.kill(os.getpid(), getattr(signal, behaviour))
        time.sleep(5)
    if behaviour == "exit3":
        return 3
    say(f"fake: unknown behaviour {behaviour}", stream=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
