"""Bench metrics (KernelBench's, plus ours), as pure functions of the result rows.

- correct rate: share of problems where a correct candidate was found.
- fast_p vs a baseline: share of problems whose kept solution is ours (not the reference), correct
  and more than p times faster than the baseline (p = 1, 1.5, 2; eager PyTorch and torch.compile).
- geomean speedup over ALL problems of the file each one delivered, as measured: a kept reference
  is timed like any candidate (about 1.0x, sometimes a little under); only a row with no
  measurement (a crashed run, a baseline that could not be timed, a report from before kept
  references were timed) counts as 1.0.
- torch.compile vs eager: the compile baseline's own geomean speedup (1.0 where either baseline
  was not timed), the bar to clear; geomean vs eager divided by it is ours against what a user
  gets from torch.compile, a kept reference counted at its eager time.
- speed of light (the profiler's floor: bytes and FLOPs over the device's ceilings, under the
  policy's flags): eager / floor is the most any file could gain over eager on a problem, so its
  geomean bounds what a level can reach (a problem eager already runs at the floor caps at 1.0x);
  floor / delivered is the share of that reached. Both over the GPU rows that recorded a floor and
  delivered a file that was timed.
- own kernels: share of problems whose kept solution runs our kernels.
- rounds and wall time per problem: mean and median; evaluation wall time: the median and the
  largest over every evaluation of the group's problems.
On a CPU bench no timing is a speedup: fast_p and geomeans are None (printed "n/a").
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from .records import ResultRow

FAST_P = (1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")
ALL = "all"


class GroupMetrics(BaseModel):
    problems: int
    correct: int
    correct_rate: float
    errors: int = Field(description="Problems whose run crashed (worker died, server error)")
    gpu_timed: bool = Field(description="False on a CPU bench: speedup metrics are then None")
    fast: dict[str, dict[str, float | None]] = Field(description="baseline -> p ('1', '1.5', '2') -> share")
    geomean: dict[str, float | None] = Field(description="baseline -> geometric-mean speedup")
    compile_vs_eager: float | None = Field(
        default=None, description="Geometric mean of eager / torch.compile time (None on a CPU bench)")
    sol_vs_eager: float | None = Field(
        default=None, description="Geometric mean of eager / speed-of-light time: the most a level "
        "could gain over eager (None: no row recorded a floor)")
    sol_share: float | None = Field(
        default=None, description="Geometric mean of speed-of-light / delivered time: how close the "
        "delivered files come to the floor, 100% at it")
    own_kernels_rate: float
    rounds_mean: float
    rounds_median: float
    wall_s_mean: float
    wall_s_median: float
    wall_s_total: float
    eval_s_median: float | None = Field(None, description="Median wall seconds of one evaluation "
                                        "(None: no evaluation recorded)")
    eval_s_max: float | None = None


class Summary(BaseModel):
    groups: dict[str, GroupMetrics] = Field(description="Per level in level order, then 'all'")
    device: str | None = None
    gpus: list[str] = Field(default_factory=list, description="GPU names the timings came from")
    precision: dict[str, dict[str, bool]] = Field(
        default_factory=dict, description="Precision policy -> the flags it set on both sides, for the "
        "policies the rows were judged and timed under (one, unless rows of several benches were merged)")
    baselines_in: dict[str, int] = Field(
        default_factory=dict, description="Where the GPU rows' baselines were timed "
        "(eval/judge/baselines.py) -> rows; 'judge' also counts rows that did not record it")


def p_label(p: float) -> str:
    return f"{p:g}"


def delivered(row: ResultRow) -> bool:
    """Whether the row delivered a file that was judged: a correct candidate or the reference kept."""
    return row.correct or row.solution_is_reference


def speedup(row: ResultRow, baseline: str) -> float | None:
    """The measured speedup of the row's delivered file (a kept reference's too); 1.0 only where
    nothing was measured; None on CPU."""
    if row.device != "cuda":
        return None
    s = row.speedup_vs_eager if baseline == "eager" else row.speedup_vs_compile
    if s is None or s <= 0 or not delivered(row):
        return 1.0
    return s


def compile_speedup(row: ResultRow) -> float | None:
    """torch.compile's speedup over eager on the row's problem: 1.0 when either was not timed."""
    if row.device != "cuda":
        return None
    if row.eager_ms and row.compile_ms and row.eager_ms > 0 and row.compile_ms > 0:
        return row.eager_ms / row.compile_ms
    return 1.0


def floor_times(rows: list[ResultRow]) -> list[tuple[float, float, float]]:
    """(eager, speed-of-light floor, delivered) ms of the GPU rows that delivered a file and
    recorded all three."""
    out: list[tuple[float, float, float]] = []
    for r in rows:
        e, f, d = r.eager_ms, r.floor_ms, r.runtime_ms
        if r.device == "cuda" and delivered(r) and e and f and d and min(e, f, d) > 0:
            out.append((e, f, d))
    return out


def geomean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def group_metrics(rows: list[ResultRow]) -> GroupMetrics:
    n = len(rows)
    timed = any(r.device == "cuda" for r in rows)
    fast: dict[str, dict[str, float | None]] = {}
    means: dict[str, float | None] = {}
    for b in BASELINES:
        s = [speedup(r, b) or 1.0 for r in rows]  # a CPU row inside a GPU bench counts as 1.0
        ours = [r.correct and not r.solution_is_reference for r in rows]
        fast[b] = {p_label(p): (sum(1 for mine, v in zip(ours, s, strict=True) if mine and v > p) / n
                                if timed and n else None) for p in FAST_P}
        means[b] = geomean(s) if timed else None
    rounds = [float(r.rounds) for r in rows] or [0.0]
    walls = [r.wall_s for r in rows] or [0.0]
    evals = [e for r in rows for e in r.eval_s]
    correct = sum(r.correct for r in rows)
    sol = floor_times(rows)
    return GroupMetrics(
        problems=n, correct=correct, correct_rate=correct / n if n else 0.0,
        errors=sum(r.error is not None for r in rows), gpu_timed=timed, fast=fast, geomean=means,
        compile_vs_eager=geomean(compile_speedup(r) or 1.0 for r in rows) if timed else None,
        sol_vs_eager=geomean(eager / floor for eager, floor, _ in sol),
        sol_share=geomean(floor / done for _, floor, done in sol),
        own_kernels_rate=sum(r.uses_own_kernels for r in rows) / n if n else 0.0,
        rounds_mean=statistics.fmean(rounds), rounds_median=statistics.median(rounds),
        wall_s_mean=statistics.fmean(walls), wall_s_median=statistics.median(walls), wall_s_total=sum(walls),
        eval_s_median=statistics.median(evals) if evals else None, eval_s_max=max(evals, default=None))


def level_order(level: str) -> tuple[int, str]:
    digits = "".join(c for c in level if c.isdigit())
    return (int(digits) if digits else 1 << 30, level)


def summarize(rows: list[ResultRow]) -> Summary:
    levels = sorted({r.level for r in rows}, key=level_order)
    groups = {lv: group_metrics([r for r in rows if r.level == lv]) for lv in levels}
    groups[ALL] = group_metrics(rows)
    devices = sorted({r.device for r in rows})
    from ..eval.precision import policy

    return Summary(groups=groups, device=devices[0] if len(devices) == 1 else ",".join(devices) or None,
                   gpus=sorted({r.gpu for r in rows if r.gpu}),
                   precision={name: policy(name).flags() for name in sorted({r.precision for r in rows})},
                   baselines_in=dict(sorted(Counter(r.baselines_in or "judge" for r in rows
                                                    if not r.timing_is_cpu and r.eager_ms).items())))


# ---- the table printed last -----------------------------------------------------------------

def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _secs(median: float | None, most: float | None) -> str:
    return "n/a" if median is None or most is None else f"{median:.0f} / {most:.0f}"


def table_rows(summary: Summary) -> list[tuple[str, list[str]]]:
    """(metric label, one cell per group) rows: the same table in the terminal and the HTML report."""
    gs = list(summary.groups.values())
    out = [("problems", [str(g.problems) for g in gs]),
           ("correct", [f"{_pct(g.correct_rate)} ({g.correct})" for g in gs])]
    for b, name in (("eager", "eager"), ("compile", "torch.compile")):
        for p in FAST_P:
            out.append((f"fast_{p:g} vs {name}", [_pct(g.fast[b][p_label(p)]) for g in gs]))
        out.append((f"geomean vs {name}", [_x(g.geomean[b]) for g in gs]))
    out.append(("torch.compile vs eager", [_x(g.compile_vs_eager) for g in gs]))
    out += [("speed of light vs eager", [_x(g.sol_vs_eager) for g in gs]),
            ("delivered, share of speed of light", [_pct(g.sol_share) for g in gs])]
    out += [("own kernels", [_pct(g.own_kernels_rate) for g in gs]),
            ("rounds mean / median", [f"{g.rounds_mean:.1f} / {g.rounds_median:g}" for g in gs]),
            ("wall s mean / median", [f"{g.wall_s_mean:.0f} / {g.wall_s_median:.0f}" for g in gs]),
            ("wall s total", [f"{g.wall_s_total:.0f}" for g in gs]),
            ("evaluation s median / slowest", [_secs(g.eval_s_median, g.eval_s_max) for g in gs]),
            ("crashed runs", [str(g.errors) for g in gs])]
    return out


def render_table(summary: Summary) -> str:
    head = ["metric", *summary.groups]
    body = [[label, *cells] for label, cells in table_rows(summary)]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in [head, *body]]
    note = ("" if any(g.gpu_timed for g in summary.groups.values())
            else "\nCPU bench: timings are CPU timings, never speedups (n/a).")
    if summary.precision:
        note += "\nprecision: " + "; ".join(f"{name} ({', '.join(f'{k}={v}' for k, v in flags.items())})"
                                            for name, flags in summary.precision.items())
    if summary.baselines_in:
        note += "\nbaselines timed in: " + ", ".join(f"{_WHERE.get(k, k)} ({n})"
                                                    for k, n in summary.baselines_in.items())
    return "\n".join(lines) + note


_WHERE = {"process": "their own process", "process+judge": "their own process, torch.compile in the judge",
          "judge": "the judge"}
