"""`kernelskill` command line: one subcommand per job, each imported only when it runs.

Importing only the chosen command keeps `kernelskill eval` free of langgraph, chromadb and
pydantic, so it runs on a bare GPU host that has just torch and triton. Errors a user can hit
print one line to stderr (no traceback) and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

# Subcommand -> (module under kernelskill.cli, one-line help). Each module defines
# `add_arguments(parser)` and `EXAMPLES` (or `parse_args(argv)`), and `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "optimize": ("cmd_optimize", "run the agent graph on a problem; write solution.py and report.json"),
    "eval": ("cmd_eval", "check a candidate ModelNew against a problem and time it"),
    "profile": ("cmd_profile", "where a forward's time goes: kernels, speed of light, bottleneck class"),
    "skills": ("cmd_skills", "browse, search and score the optimization skill library"),
    "graph": ("cmd_graph", "print the agent graph (Mermaid)"),
    "bench": ("cmd_bench", "optimize a suite of problems, one worker per GPU; results, metrics, HTML report"),
    "passes": ("cmd_passes", "two bench passes of the same problems: rounds and evaluations to the best"),
    "wheelhouse": ("cmd_wheelhouse", "download every wheel an air-gapped GPU host needs"),
    "state": ("cmd_state", "the state database: set up its tables, migrate SQLite threads into PostgreSQL"),
}


class UsageError(Exception):
    """A user mistake: printed as one line, exit code 2."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows each option's default, except where the help text already says it or there is none
    to show (None and False mean "not given": the help text says what then happens); keeps the
    example epilog's line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def example(*lines: str) -> str:
    """A command's --help epilog: one or more example command lines."""
    return "example:\n" + "\n".join(f"  {ln}" for ln in lines)


def version() -> str:
    """The installed package's version; in a source checkout without metadata, pyproject's."""
    from importlib import metadata

    try:
        return metadata.version("kernelskill")
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        return tomllib.loads(pyproject.read_text())["project"]["version"]


def _overview() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelskill", description=__doc__.splitlines()[0],
                                     formatter_class=HelpFormatter, epilog=example(
                                         "kernelskill optimize problems/level2/01_linear_gelu_scale.py "
                                         "--device cpu --rounds 2", "kernelskill COMMAND --help"))
    parser.add_argument("--version", action="version", version=f"kernelskill {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def parse(argv: list[str]) -> tuple[argparse.Namespace, object]:
    """Parse argv for one command, importing only that command's module."""
    if not argv or argv[0] in ("-h", "--help", "--version") or argv[0] not in COMMANDS:
        overview = _overview()
        if argv and argv[0] == "--version":
            overview.parse_args(argv[:1])  # prints the version, exits 0
        if argv and argv[0] not in ("-h", "--help"):
            overview.error(f"unknown command {argv[0]!r}")
        overview.print_help()
        raise SystemExit(0 if argv else 2)
    name = argv[0]
    mod = importlib.import_module(f"kernelskill.cli.{COMMANDS[name][0]}")
    if hasattr(mod, "parse_args"):  # a command that builds its own parser
        return mod.parse_args(argv[1:]), mod
    p = argparse.ArgumentParser(prog=f"kernelskill {name}", description=COMMANDS[name][1],
                                formatter_class=HelpFormatter, epilog=example(*mod.EXAMPLES))
    mod.add_arguments(p)
    return p.parse_args(argv[1:]), mod


def interruptible() -> None:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt: the one way a run stops with nothing lost (children
    killed, the resume command printed), also in a process started with SIGINT ignored, as
    `cmd &` in a script starts it (Python then installs no handler). SIGTERM (what `kill` and a
    scheduler send) and SIGHUP (a closed terminal) stop it the same way: by default they end the
    process with no resume command and no output folder. Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _as_interrupt)


def _as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)  # the report names it (graph/runner.py)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, mod = parse(argv)
    name = argv[0]
    interruptible()
    try:
        return int(mod.run(args))  # type: ignore[attr-defined]
    except UsageError as e:
        print(f"kernelskill {name}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kernelskill {name}: interrupted", file=sys.stderr)
        return 130

