"""Two bench passes over the same problems, side by side: did the second, which started from the
experience statistics the first wrote, reach its best in fewer rounds? (Memory that learns should
spend fewer rounds on moves the first pass measured as losers.)

    pairs = compare(read_pass(first_folder), read_pass(second_folder)); print(render(pairs))

A pass is a bench folder (`kernelskill bench --out`), read through its problems' report.json:
the round whose variant last became the best (0: the first candidate stayed best), the
evaluations judged up to the end of that round (repeats, never judged, not counted), the rounds
run and the delivered runtime. Nothing runs here.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PassRow:
    """One problem in one pass."""

    best_round: int
    evaluations_to_best: int
    rounds: int
    delivered_ms: float | None
    """The delivered candidate's full timing (None: no correct candidate, or timed on a CPU)."""


def pass_row(report: dict[str, Any]) -> PassRow:
    """Pure: a problem's row from its report.json."""
    won = [r["round"] for r in report.get("per_round") or [] if r.get("won")]
    best = max(won, default=0)
    judged = [a for a in report.get("attempts") or []
              if a.get("repeat_of") is None and a.get("stage") not in ("", "author", None)]
    delivered = report.get("delivered") or {}
    ms = delivered.get("runtime_ms") if delivered.get("correct") and not delivered.get("timing_is_cpu") \
        else None
    return PassRow(best_round=best, evaluations_to_best=sum(1 for a in judged if a.get("round", 0) <= best),
                   rounds=int(report.get("rounds") or 0), delivered_ms=ms)


def read_pass(folder: Path) -> dict[str, PassRow]:
    """Every problem of a bench folder ('level1/01_matmul_square' -> its row)."""
    rows = {}
    for path in sorted(folder.glob("*/*/report.json")):
        try:
            rows[f"{path.parent.parent.name}/{path.parent.name}"] = pass_row(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            continue  # a report cut short by a crash: the problem has no row in this pass
    return rows


Pair = tuple[str, PassRow | None, PassRow | None]


def compare(first: dict[str, PassRow], second: dict[str, PassRow]) -> list[Pair]:
    """Pure: the problems of either pass, each with its row in the first and in the second."""
    return [(p, first.get(p), second.get(p)) for p in sorted({*first, *second})]


def summary(pairs: list[Pair]) -> dict[str, Any]:
    """Pure: over the problems both passes finished, how many reached their best in fewer rounds
    in the second, as many, or more; the mean round of the best and the evaluations to it in
    each; the geometric mean of delivered time, second over first (< 1: the second is faster)."""
    both = [(a, b) for _, a, b in pairs if a is not None and b is not None]
    timed = [b.delivered_ms / a.delivered_ms for a, b in both if a.delivered_ms and b.delivered_ms]
    n = len(both) or 1
    return {
        "problems": len(both),
        "fewer_rounds": sum(b.best_round < a.best_round for a, b in both),
        "same_rounds": sum(b.best_round == a.best_round for a, b in both),
        "more_rounds": sum(b.best_round > a.best_round for a, b in both),
        "mean_best_round": [sum(a.best_round for a, _ in both) / n, sum(b.best_round for _, b in both) / n],
        "evaluations_to_best": [sum(a.evaluations_to_best for a, _ in both),
                                sum(b.evaluations_to_best for _, b in both)],
        "delivered_second_over_first": math.exp(sum(map(math.log, timed)) / len(timed)) if timed else None,
    }


def _cell(r: PassRow | None) -> list[str]:
    if r is None:
        return ["-", "-", "-", "-"]
    ms = f"{r.delivered_ms:.4f}" if r.delivered_ms else "-"
    return [str(r.best_round), str(r.evaluations_to_best), str(r.rounds), ms]


def render(pairs: list[Pair]) -> str:
    """A Markdown table, one row per problem, and the summary's sentence."""
    lines = ["| problem | best at round | evaluations to it | rounds | delivered ms "
             "| 2nd: best at round | evaluations to it | rounds | delivered ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {p} | " + " | ".join(_cell(a) + _cell(b)) + " |" for p, a, b in pairs]
    s = summary(pairs)
    ratio = s["delivered_second_over_first"]
    lines += ["", f"On the {s['problems']} problems both passes finished, the second reached its best in "
              f"fewer rounds on {s['fewer_rounds']}, as many on {s['same_rounds']} and more on "
              f"{s['more_rounds']}; mean round of the best {s['mean_best_round'][0]:.2f} -> "
              f"{s['mean_best_round'][1]:.2f}, evaluations to the best {s['evaluations_to_best'][0]} -> "
              f"{s['evaluations_to_best'][1]}"
              + (f"; delivered time, second over first: {ratio:.3f} (geometric mean)." if ratio else ".")]
    return "\n".join(lines)


def as_json(pairs: list[Pair]) -> dict[str, Any]:
    """The rows and the summary as plain data."""
    return {"problems": {p: {"first": asdict(a) if a else None, "second": asdict(b) if b else None}
                         for p, a, b in pairs}, "summary": summary(pairs)}
