"""`kernelskill passes FIRST SECOND`: two bench runs of the same problems side by side, the second
started from the experience statistics the first wrote: the round each reached its best in, the
evaluations it took to get there, and the delivered times (bench/passes.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

EXAMPLES = ("kernelskill passes runs/pass1 runs/pass2",
            "kernelskill passes runs/pass1 runs/pass2 --json > passes.json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("first", type=Path, metavar="FIRST", help="the first pass's bench folder (bench --out)")
    p.add_argument("second", type=Path, metavar="SECOND", help="the second pass's bench folder")
    p.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")


def run(args: argparse.Namespace) -> int:
    from ..bench.passes import as_json, compare, read_pass, render
    from .main import UsageError

    passes = []
    for folder in (args.first, args.second):
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such folder (a bench folder: `kernelskill bench --out`)")
        rows = read_pass(folder)
        if not rows:
            raise UsageError(f"{folder}: no problem's report.json in it (expected LEVEL/PROBLEM/report.json, "
                             "as `kernelskill bench --out` writes)")
        passes.append(rows)
    pairs = compare(*passes)
    print(json.dumps(as_json(pairs), indent=1) if args.json else render(pairs))
    return 0
