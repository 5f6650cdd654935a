"""The worst-N lists under a bench's table: ordered by distance from the floor and from
torch.compile, each reason read from the row and the problem's report.json."""

from __future__ import annotations

import json
from pathlib import Path

from kernelskill.bench.records import ResultRow
from kernelskill.bench.worst import render, worst


def row(name: str, runtime: float, floor: float | None, vs_compile: float, **kw: object) -> ResultRow:
    fields: dict[str, object] = {"timing_is_cpu": False, **kw}
    return ResultRow(problem=f"level1/{name}", level="level1", category="gemm", path=f"/p/{name}.py",
                     device="cuda", correct=True, runtime_ms=runtime, floor_ms=floor,
                     speedup_vs_compile=vs_compile, thread_id=name, **fields)


def test_lists_are_ordered_and_say_why_from_the_report(tmp_path: Path) -> None:
    (tmp_path / "level1/a").mkdir(parents=True)
    profile = {"kernels": [{"name": "copy", "share": 0.2, "limiter": "memory-bound"},
                           {"name": "_gemm_kernel", "share": 0.7, "limiter": "compute-bound"}]}
    (tmp_path / "level1/a/report.json").write_text(json.dumps({"profile": profile}))
    rows = [row("a", 3.0, 1.0, 1.5, solution_is_reference=False, rounds=6, report="level1/a/report.json",
                stop_reason="round budget spent (6 rounds)"),
            row("b", 1.2, 1.0, 0.8, stop_reason="the best candidate runs within 1.1x of its floor"),
            row("c", 5.0, None, 0.6, solution_is_reference=False, skill_won="online-softmax", rounds=2),
            row("cpu", 9.0, 1.0, 0.1, timing_is_cpu=True)]
    floor, behind = worst(rows, tmp_path, n=2)
    assert [(w.problem, w.ratio) for w in floor] == [("level1/a", 3.0), ("level1/b", 1.2)]
    assert [w.problem for w in behind] == ["level1/c", "level1/b"]  # CPU timings rank nothing
    assert floor[0].why == ("6 rounds, no round won; hottest _gemm_kernel 70% (compute-bound); "
                            "stop: round budget spent (6 rounds)")
    assert floor[1].why.startswith("kept the reference; stop: the best candidate")
    assert behind[0].why == "2 rounds, won by online-softmax"  # no report: nothing invented
    recurrent = {"profile": {**profile, "structures": ["recurrent"]}}
    (tmp_path / "level1/a/report.json").write_text(json.dumps(recurrent))
    assert "the floor counts no step-to-step dependence; stop:" in worst(rows, tmp_path, n=1)[0][0].why
    text = render(floor, behind)
    assert text.splitlines()[0] == "furthest from the speed-of-light floor:"
    assert "0.60 x compile" in text and "3.00 x floor" in text


def test_a_cpu_bench_lists_nothing(tmp_path: Path) -> None:
    rows = [row("cpu", 9.0, 1.0, 0.1, timing_is_cpu=True)]
    assert render(*worst(rows, tmp_path)) == ""
