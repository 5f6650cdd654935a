"""The problems a bench left furthest from their speed-of-light floor and furthest behind
torch.compile, each with the reason its own report gives: what the reader of a bench looks at
after the averages (issue B's "ten furthest from their floor with why", issue C's "worst five").

The reason is read, not guessed: the kept reference and the run's stop reason from the row, and
from the problem's report.json the hottest kernel of the delivered candidate's last profile, its
share of GPU time and its limiter (nodes/limiter.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .records import ResultRow


@dataclass(frozen=True)
class Worst:
    """One row of a worst-N list."""

    problem: str
    ratio: float
    """runtime / floor (furthest from the floor) or speedup vs torch.compile (behind compile)."""
    why: str


def _profile(bench_dir: Path, row: ResultRow) -> dict | None:
    if not row.report:
        return None
    try:
        return json.loads((bench_dir / row.report).read_text()).get("profile")
    except (OSError, ValueError):
        return None


def why(row: ResultRow, profile: dict | None) -> str:
    """One line: what was delivered, where its time goes, and why the run stopped (pure)."""
    parts = ["kept the reference" if row.solution_is_reference else f"{row.rounds} rounds"
             + (f", won by {row.skill_won}" if row.skill_won else ", no round won")]
    kernels = (profile or {}).get("kernels") or []
    if kernels and not row.solution_is_reference:
        hot = max(kernels, key=lambda k: k.get("share") or 0.0)
        limiter = hot.get("limiter") or hot.get("bottleneck") or "limiter unknown"
        parts.append(f"hottest {hot.get('name')} {100 * (hot.get('share') or 0):.0f}% ({limiter})")
    if "recurrent" in ((profile or {}).get("structures") or []):
        # The floor is bytes and FLOPs over peak rates: a recurrence's steps wait on each other.
        parts.append("the floor counts no step-to-step dependence")
    if row.stop_reason:
        parts.append(f"stop: {row.stop_reason}")
    if row.error:
        parts.append(f"error: {row.error}")
    return "; ".join(parts)


def furthest_from_floor(rows: list[ResultRow], n: int) -> list[tuple[ResultRow, float]]:
    """Pure: the n timed rows with the largest runtime / floor, largest first."""
    timed = [(r, r.runtime_ms / r.floor_ms) for r in rows
             if r.runtime_ms and r.floor_ms and not r.timing_is_cpu]
    return sorted(timed, key=lambda t: -t[1])[:n]


def behind_compile(rows: list[ResultRow], n: int) -> list[tuple[ResultRow, float]]:
    """Pure: the n rows with the lowest speedup against torch.compile, lowest first."""
    timed = [(r, r.speedup_vs_compile) for r in rows if r.speedup_vs_compile and not r.timing_is_cpu]
    return sorted(timed, key=lambda t: t[1])[:n]


def worst(rows: list[ResultRow], bench_dir: Path, n: int = 10) -> tuple[list[Worst], list[Worst]]:
    """(furthest from the floor, behind torch.compile), each at most n rows with their reasons."""
    floor, behind = furthest_from_floor(rows, n), behind_compile(rows, n)
    profiles = {r.problem: _profile(bench_dir, r) for r, _ in floor + behind}  # each report read once

    def listed(pairs: list[tuple[ResultRow, float]]) -> list[Worst]:
        return [Worst(r.problem, x, why(r, profiles[r.problem])) for r, x in pairs]
    return listed(floor), listed(behind)


def render(floor: list[Worst], compile_: list[Worst]) -> str:
    """Two short lists for the terminal; empty when the bench timed nothing on a GPU."""
    lines: list[str] = []
    for title, items, unit in (("furthest from the speed-of-light floor", floor, "x floor"),
                               ("furthest behind torch.compile", compile_, "x compile")):
        if not items:
            continue
        lines.append(f"{title}:")
        width = max(len(w.problem) for w in items)
        lines += [f"  {w.problem:<{width}}  {w.ratio:5.2f} {unit}  {w.why}" for w in items]
    return "\n".join(lines)
