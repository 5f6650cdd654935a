"""`kernelskill` command line: one subcommand per job, each imported only when it runs.

Importing only the chosen command keeps `kernelskill eval` free of langgraph, chromadb and
pydantic, so it runs on a bare GPU host that has just torch and triton. Errors a user can hit
print one line to stderr (no traceback) and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand -> (module under kernelskill.graph, one-line help). Each module defines
# `add_arguments(parser)` (or `parse_args(argv)`) and `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "optimize": ("cmd_optimize", "run the agent graph on a problem; write solution.py and report.json"),
    "eval": ("cmd_eval", "check a candidate ModelNew against a problem and time it"),
    "profile": ("cmd_profile", "where a forward's time goes: kernels, speed of light, bottleneck class"),
    "skills": ("cmd_skills", "browse, search and score the optimization skill library"),
    "graph": ("cmd_graph", "print the agent graph (Mermaid)"),
    "bench": ("cmd_bench", "optimize a suite of problems, one worker per GPU; results, metrics, HTML report"),
    "wheelhouse": ("cmd_wheelhouse", "download every wheel an air-gapped GPU host needs"),
}


class UsageError(Exception):
    """A user mistake: printed as one line, exit code 2."""


def _overview() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelskill", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def parse(argv: list[str]) -> tuple[argparse.Namespace, object]:
    """Parse argv for one command, importing only that command's module."""
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        overview = _overview()
        if argv and argv[0] not in ("-h", "--help"):
            overview.error(f"unknown command {argv[0]!r}")
        overview.print_help()
        raise SystemExit(0 if argv else 2)
    name = argv[0]
    mod = importlib.import_module(f"kernelskill.graph.{COMMANDS[name][0]}")
    if hasattr(mod, "parse_args"):  # a command that builds its own parser
        return mod.parse_args(argv[1:]), mod
    p = argparse.ArgumentParser(prog=f"kernelskill {name}", description=COMMANDS[name][1])
    mod.add_arguments(p)
    return p.parse_args(argv[1:]), mod


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, mod = parse(argv)
    name = argv[0]
    try:
        return int(mod.run(args))  # type: ignore[attr-defined]
    except UsageError as e:
        print(f"kernelskill {name}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kernelskill {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
