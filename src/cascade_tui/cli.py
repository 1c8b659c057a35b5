"""`cascade`: one command with subcommands; each lives in its own module and is imported lazily by
name, so `cascade worker` on a sim host never imports the server or the UI, and `cascade serve`
never imports the UI. It lives on the client side (this package holds only the umbrella and the
script commands besides the UI; importing it loads no Textual)."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys

from cascade_core.cli_usage import EXIT_USAGE, not_utf8_problem

# subcommand -> (module with `main(argv: list[str]) -> int`, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "up": ("cascade_tui.up", "start a server with embedded defaults and open the UI on it"),
    "serve": ("cascade_server.serve", "run the API server (and the embedded S3 endpoint)"),
    "tui": ("cascade_tui.tui_command", "open the terminal UI on a running server"),
    "worker": ("cascade_worker.cli", "run one sim: Accel-Sim, or the stand-in replay"),
    "upload": ("cascade_tui.scripting.upload_command", "upload a trace directory to the S3 endpoint"),
    "timeline": (
        "cascade_tui.scripting.timeline_command",
        "import real timing and steps from a PyTorch profile",
    ),
    "simulate": ("cascade_worker.simulate_cli", "predict a trace's steps from a sim's kernel times"),
    "compare": ("cascade_worker.compare_cli", "compare predicted steps with the measured ones"),
    "traces": ("cascade_tui.scripting.traces_command", "list the traces (or delete one)"),
    "configs": ("cascade_tui.scripting.configs_command", "list the GPU configs a run can use"),
    "runs": ("cascade_tui.scripting.runs_command", "list the runs"),
    "run": (
        "cascade_tui.scripting.run_command",
        "start, follow, show, cancel, re-run, retry or delete a run",
    ),
    "results": ("cascade_tui.scripting.results_command", "a run's results: totals, kernels or comparison"),
    "accuracy": (
        "cascade_tui.scripting.accuracy_command",
        "per trace and config: simulated against real kernel time",
    ),
    "simulator": (
        "cascade_worker.simulator.cli",
        "install the real Accel-Sim, or say which simulator is used",
    ),
    "agent-prompt": (
        "cascade_server.api.agent_prompt",
        "print the prompt that lets an AI agent work this app",
    ),
}


def version() -> str:
    try:
        return importlib.metadata.version("cascade-sim")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without installing
        return "unknown (not installed)"


def usage() -> str:
    lines = ["usage: cascade <command> [options]", "       cascade --version", "", "commands:"]
    lines += [f"  {name:<12} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "Run `cascade <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        # `cascade ... | head`: the reader has what it wanted. Every command ends quietly then,
        # without the interpreter's traceback (stdout goes to /dev/null so its final flush cannot
        # fail again).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run(args: list[str]) -> int:
    if not args:  # a usage error like any other: on stderr, so `cascade | ...` pipes nothing
        print(usage(), file=sys.stderr)
        return EXIT_USAGE
    if problem := not_utf8_problem(args):
        command = f"cascade {args[0]}" if args[0] in SUBCOMMANDS else "cascade"
        print(f"{command}: {problem} (--help for usage)", file=sys.stderr)
        return EXIT_USAGE
    if args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("--version", "-V"):
        print(f"cascade {version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(
            f"cascade: unknown command {name!r} (commands: {', '.join(SUBCOMMANDS)}; "
            "cascade --help says what each does)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
