"""Bench metrics against hand-computed numbers; CPU benches say n/a instead of speedups."""

from __future__ import annotations

import math

import pytest
from kernelskill.bench.metrics import render_table, speedup, summarize, table_rows
from kernelskill.bench.records import ResultRow


def row(key: str, *, correct: bool = True, ref: bool = False, se: float | None = None,
        sc: float | None = None, own: bool = True, rounds: int = 1, wall: float = 1.0, device: str = "cuda",
        error: str | None = None, eager: float | None = None, comp: float | None = None,
        evals: tuple[float, ...] = ()) -> ResultRow:
    level = key.split("/")[0]
    return ResultRow(problem=key, level=level, category="other", path=f"/{key}.py", device=device,
                     correct=correct, solution_is_reference=ref, uses_own_kernels=own, speedup_vs_eager=se,
                     speedup_vs_compile=sc, timing_is_cpu=device != "cuda", rounds=rounds, wall_s=wall,
                     thread_id=f"t-{key}", error=error, eager_ms=eager, compile_ms=comp, eval_s=list(evals))


def suite(device: str = "cuda") -> list[ResultRow]:
    return [
        row("level1/a", se=2.0, sc=1.0, rounds=2, wall=10, device=device, evals=(3, 5)),  # 2x: not fast_2
        row("level1/b", se=4.0, sc=2.5, rounds=4, wall=30, device=device, evals=(4,)),
        # The reference kept, and measured like any delivered file (run-to-run noise around 1.0x):
        row("level1/c", ref=True, se=0.8, sc=1.2, own=False, rounds=3, wall=20, device=device,
            evals=(10, 2, 6)),
        row("level2/d", correct=False, own=False, rounds=1, wall=5, device=device, error="worker died"),
        row("level2/e", se=1.2, sc=None, rounds=6, wall=100, device=device, evals=(8,)),  # compile not timed
    ]


def test_a_kept_reference_counts_as_measured_and_only_unmeasured_rows_as_one() -> None:
    a, _, c, d, e = suite()
    assert speedup(a, "eager") == 2.0 and speedup(c, "eager") == 0.8 and speedup(c, "compile") == 1.2
    assert speedup(d, "eager") == 1.0 and speedup(e, "compile") == 1.0
    assert speedup(row("level1/old", ref=True, own=False), "eager") == 1.0  # a report without timings
    assert speedup(suite("cpu")[0], "eager") is None


def test_hand_computed_metrics() -> None:
    s = summarize(suite())
    assert list(s.groups) == ["level1", "level2", "all"]
    l1, l2, al = s.groups["level1"], s.groups["level2"], s.groups["all"]
    # level1: eager [2, 4, 0.8], compile [1, 2.5, 1.2]; fast_p counts our solutions only
    assert (l1.problems, l1.correct, l1.correct_rate) == (3, 3, 1.0)
    assert l1.fast["eager"] == pytest.approx({"1": 2 / 3, "1.5": 2 / 3, "2": 1 / 3})
    assert l1.fast["compile"] == pytest.approx({"1": 1 / 3, "1.5": 1 / 3, "2": 1 / 3})
    assert l1.geomean["eager"] == pytest.approx(6.4 ** (1 / 3))
    assert l1.geomean["compile"] == pytest.approx(3.0 ** (1 / 3))
    assert l1.own_kernels_rate == pytest.approx(2 / 3)
    assert (l1.rounds_mean, l1.rounds_median, l1.wall_s_mean, l1.wall_s_median) == (3, 3, 20, 20)
    assert (l1.eval_s_median, l1.eval_s_max) == (4.5, 10)  # every evaluation: 2 3 4 5 6 10
    # level2: eager [1 (failed), 1.2], compile [1, 1]
    assert (l2.correct_rate, l2.errors) == (0.5, 1)
    assert l2.fast["eager"] == pytest.approx({"1": 0.5, "1.5": 0.0, "2": 0.0})
    assert l2.geomean["eager"] == pytest.approx(math.sqrt(1.2))
    assert l2.geomean["compile"] == pytest.approx(1.0)
    assert (l2.rounds_mean, l2.wall_s_median) == (3.5, 52.5)
    assert (l2.eval_s_median, l2.eval_s_max) == (8, 8)  # the crashed run recorded none
    # all: eager [2, 4, 0.8, 1, 1.2] -> 7.68 ** 0.2; compile [1, 2.5, 1.2, 1, 1] -> 3 ** 0.2
    assert (al.problems, al.correct_rate, al.errors) == (5, 0.8, 1)
    assert al.fast["eager"] == pytest.approx({"1": 0.6, "1.5": 0.4, "2": 0.2})
    assert al.fast["compile"] == pytest.approx({"1": 0.2, "1.5": 0.2, "2": 0.2})
    assert al.geomean["eager"] == pytest.approx(7.68 ** 0.2)
    assert al.geomean["compile"] == pytest.approx(3.0 ** 0.2)
    assert al.own_kernels_rate == pytest.approx(0.6)
    assert (al.rounds_mean, al.rounds_median) == (3.2, 3)
    assert (al.wall_s_mean, al.wall_s_median, al.wall_s_total) == (33, 20, 165)
    assert (al.eval_s_median, al.eval_s_max) == (5, 10)
    table = render_table(s)
    assert "1.50x" in table and "60%" in table and "4 / 10" in table
    floorless = {"speed of light vs eager", "delivered, share of speed of light"}  # no row has a floor
    assert all(c != "n/a" for label, cells in table_rows(s) if label not in floorless for c in cells)


def test_torch_compile_vs_eager_is_the_bar_and_divides_out() -> None:
    rows = [row("level1/a", se=3.0, sc=1.5, eager=3.0, comp=1.5),   # compile 2x, ours 3x
            row("level1/b", ref=True, se=0.5, sc=0.4, own=False, eager=1.0, comp=0.8),  # reference kept: 0.5x
            row("level1/c", correct=False, own=False, eager=2.0)]  # compile not timed: counts 1.0
    g = summarize(rows).groups["level1"]
    assert g.compile_vs_eager == pytest.approx((2.0 * 1.25) ** (1 / 3))
    # Ours vs what the user gets from torch.compile (a kept reference at its measured time):
    user = [3.0 / 2.0, 0.5 / 1.25, 1.0]
    assert g.geomean["eager"] / g.compile_vs_eager == pytest.approx(math.prod(user) ** (1 / 3))
    assert ("torch.compile vs eager", ["1.36x", "1.36x"]) in table_rows(summarize(rows))
    assert summarize(suite("cpu")).groups["all"].compile_vs_eager is None


def test_cpu_bench_has_no_speedups() -> None:
    s = summarize(suite("cpu"))
    for g in s.groups.values():
        assert not g.gpu_timed
        assert g.geomean == {"eager": None, "compile": None}
        assert all(v is None for b in g.fast.values() for v in b.values())
    assert s.groups["all"].correct_rate == 0.8  # correctness is real on a CPU
    table = render_table(s)
    assert "n/a" in table and "CPU bench" in table
    assert not any(c.endswith("x") for line in table.splitlines() for c in line.split())


def test_empty_and_unknown_levels() -> None:
    s = summarize([row("unknown/z", wall=3), row("level10/y"), row("level2/x")])
    assert list(s.groups) == ["level2", "level10", "unknown", "all"]
    assert summarize([]).groups["all"].problems == 0


def test_the_summary_says_where_the_baselines_were_timed() -> None:
    rows = [row("level1/a", se=2.0, eager=1.0), row("level1/b", se=1.5, eager=2.0),
            row("level1/c", se=1.1, eager=1.0), row("level1/d", se=1.0, eager=None),
            row("level1/e", se=1.0, eager=1.0, device="cpu")]
    rows[0].baselines_in = rows[1].baselines_in = "process"
    # A row without the field was timed in the judge; CPU and untimed rows are not counted.
    s = summarize(rows)
    assert s.baselines_in == {"judge": 1, "process": 2}
    assert "baselines timed in: the judge (1), their own process (2)" in render_table(s)
    assert "baselines timed in" not in render_table(summarize(suite("cpu")))


def test_speed_of_light_bounds_each_level_and_the_delivered_share_of_it() -> None:
    rows = [row("level1/a", se=2.0, eager=4.0), row("level1/b", ref=True, se=0.98, own=False, eager=1.0),
            row("level1/c", correct=False, own=False, eager=3.0),  # nothing delivered: left out
            row("level1/d", se=1.5, eager=3.0),  # no floor recorded: left out
            row("level1/e", se=1.0, eager=1.0, device="cpu")]  # a CPU row: left out
    for r, floor, done in zip(rows, (1.0, 1.0, 1.0, None, 1.0), (2.0, 1.02, 3.0, 2.0, 1.0), strict=True):
        r.floor_ms, r.runtime_ms = floor, done
    g = summarize(rows).groups["level1"]
    # eager / floor: 4 and 1 (eager already at the floor caps that problem at 1.0x);
    # floor / delivered: 1/2 and 1/1.02.
    assert g.sol_vs_eager == pytest.approx(2.0)
    assert g.sol_share == pytest.approx(math.sqrt(0.5 / 1.02))
    cells = dict(table_rows(summarize(rows)))
    assert cells["speed of light vs eager"] == ["2.00x", "2.00x"]
    assert cells["delivered, share of speed of light"] == ["70%", "70%"]
    s = summarize(suite("cpu"))
    assert s.groups["all"].sol_vs_eager is None and "n/a" in dict(table_rows(s))["speed of light vs eager"]
