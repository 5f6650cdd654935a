"""`kernelskill` command line: one subcommand per job, each imported only when it runs.

Errors a user can hit print one line to stderr (no traceback) and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

# Subcommand name -> (module under kernelskill.graph, one-line help). Each module defines
# `add_arguments(parser)` and `run(args) -> int`; importing lazily keeps `kernelskill eval`
# free of langgraph/chromadb, so it runs on a bare GPU host with only torch and triton.
COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("cmd_eval", "check a candidate ModelNew against a problem and time it"),
}


class UsageError(Exception):
    """A user mistake: printed as one line, exit code 2."""


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable[[argparse.Namespace], int]]]:
    import importlib

    parser = argparse.ArgumentParser(prog="kernelskill", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runners: dict[str, Callable[[argparse.Namespace], int]] = {}
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(f"kernelskill.graph.{module}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        runners[name] = mod.run
    return parser, runners


def main(argv: list[str] | None = None) -> int:
    parser, runners = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return runners[args.command](args)
    except UsageError as e:
        print(f"kernelskill {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kernelskill {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
