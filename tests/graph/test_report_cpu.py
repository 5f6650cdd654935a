"""What report.json and solution.py claim on a CPU run: no speed field reads as measured (null,
"n/a"), and a file that no evaluation passed is never headed as verified."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelskill.bench.discovery import BenchProblem
from kernelskill.bench.metrics import render_table, summarize
from kernelskill.bench.records import row_from_report
from kernelskill.graph.report import build_report, solution_header
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")


def cpu_state(best: Candidate | None, verdict: Verdict | None) -> GraphState:
    return GraphState(problem=PROBLEM, settings=RunSettings(device="cpu", size="small"), best=best,
                      best_verdict=verdict, stop_reason="done")


def test_a_cpu_run_reports_no_speed_field_as_false() -> None:
    # The case: 20 ms against eager's 0.05 ms, under the interpreter.
    v = Verdict(correct=True, stage="done", runtime_ms=20.0, eager_ms=0.05, timing_is_cpu=True)
    report = build_report(cpu_state(Candidate(source=good(1024)), v), "t")
    assert report["slower_than_eager"] is None
    delivered = report["delivered"]
    assert delivered["speedup_vs_eager"] is None and delivered["speedup_vs_compile"] is None
    row = row_from_report(BenchProblem(path=Path("r.py"), level="level1", name="r"), report, device="cpu",
                          wall_s=1.0, thread_id="t", bench_dir=Path("/b"), out_dir=Path("/b/level1/r"),
                          finished_at=0.0)
    assert row.speedup_vs_eager is None and row.speedup_vs_compile is None
    group = summarize([row]).groups["all"]
    assert group.geomean == {"eager": None, "compile": None} and group.fast["eager"]["1"] is None
    assert "geomean vs eager" in (table := render_table(summarize([row]))) and "n/a" in table
    assert "not timed on a GPU" in solution_header(cpu_state(Candidate(source=good(1024)), v), "t")


def test_a_gpu_run_says_true_or_false() -> None:  # a slower delivered file: tests/nodes/test_finalize.py
    v = Verdict(correct=True, stage="done", runtime_ms=1.0, eager_ms=1.5, speedup_vs_eager=1.5,
                timing_is_cpu=False, gpu_name="H200")
    s = cpu_state(Candidate(source=good(1024)), v).model_copy(
        update={"settings": RunSettings(device="cuda", size="small")})
    assert build_report(s, "t")["slower_than_eager"] is False


def test_the_reference_no_evaluation_passed_is_not_headed_verified() -> None:
    header = solution_header(cpu_state(None, None), "t")
    assert "# verified for" not in header
    assert "# not verified: no evaluation passed on relu_scale at small sizes" in header
