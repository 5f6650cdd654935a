"""Finalize decides the delivered file: a kept reference is the user's module unchanged, and on a
GPU it is timed like any candidate, so the reported speedup of what the user gets is measured."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from kernelskill.bench.discovery import BenchProblem
from kernelskill.bench.records import row_from_report
from kernelskill.graph.report import build_report, solution_header
from kernelskill.nodes import finalize as F
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402

CONV = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []
'''


def gpu_verdict(speedup: float, **kw: object) -> Verdict:
    return Verdict(correct=True, stage="done", runtime_ms=1.0 / speedup, eager_ms=1.0, compile_ms=0.8,
                   speedup_vs_eager=speedup, speedup_vs_compile=0.8 / (1.0 / speedup), timing_is_cpu=False,
                   gpu_name="H200", **kw)


def state(best: Candidate | None, verdict: Verdict | None, precision: str = "default") -> GraphState:
    return GraphState(problem=Problem(name="conv", path="conv.py", source=CONV),
                      settings=RunSettings(device="cuda", precision=precision), best=best,
                      best_verdict=verdict)


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stand-in for the evaluator (no GPU here): records what finalize evaluates, answers 0.97x."""
    seen: list[str] = []

    def fake(_state: GraphState, source: str, baselines: bool) -> Verdict:
        assert baselines
        seen.append(source)
        return gpu_verdict(0.97, baselines_in="process")

    monkeypatch.setattr(F, "evaluate_candidate", fake)
    return seen


def test_the_kept_reference_is_the_users_module_unchanged_and_timed(evaluations: list[str]) -> None:
    s = state(Candidate(source=good(1024)), gpu_verdict(0.9))  # correct, but slower than eager
    update = F.finalize(s)
    assert len(evaluations) == 1
    ref = evaluations[0]
    # The user's forward, renamed: no flag wrapper (it runs under the caller's flags, as the module does).
    assert "allow_tf32" not in ref and "_fp32_convs" not in ref and "return torch.relu(self.conv(x))" in ref
    ast.parse(ref)
    final = s.model_copy(update=update)
    assert final.reference_verdict is not None and final.reference_verdict.speedup_vs_eager == 0.97
    report = build_report(final, "t1")
    assert report["solution_is_reference"] and report["delivered"]["speedup_vs_eager"] == 0.97
    assert report["slower_than_eager"] is True  # said, never silent
    assert report["precision"] == {"policy": "default",
                                   "flags": {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True}}
    header = solution_header(final, "t1")
    assert "# precision policy: default (cuda.matmul.allow_tf32=False, cudnn.allow_tf32=True" in header
    assert "0.97x eager" in header
    row = row_from_report(BenchProblem(path=Path("conv.py"), level="level2", name="conv"),
                          report, device="cuda", wall_s=1.0, thread_id="t1", bench_dir=Path("/b"),
                          out_dir=Path("/b/level2/conv"), finished_at=0.0)
    assert row.solution_is_reference and row.speedup_vs_eager == 0.97 and row.precision == "default"
    assert report["delivered"]["baselines_in"] == row.baselines_in == "process"  # where eager was timed


def test_a_faster_best_is_delivered_and_nothing_else_is_evaluated(evaluations: list[str]) -> None:
    s = state(Candidate(source=good(1024)), gpu_verdict(1.5, kernel_names=["relu_scale_kernel"]),
              precision="strict")
    final = s.model_copy(update=F.finalize(s))
    assert evaluations == [] and final.reference_verdict is None and final.stop_reason == "done"
    report = build_report(final, "t2")
    assert not report["solution_is_reference"] and report["delivered"]["speedup_vs_eager"] == 1.5
    assert report["precision"]["policy"] == "strict" and not report["slower_than_eager"]
    assert "strict" in solution_header(final, "t2") and "1.50x eager" in solution_header(final, "t2")


def test_no_correct_candidate_still_times_the_reference(evaluations: list[str]) -> None:
    final = (s := state(None, None)).model_copy(update=F.finalize(s))
    assert len(evaluations) == 1 and "no correct candidate" in (final.stop_reason or "")
    assert build_report(final, "t3")["delivered"]["speedup_vs_eager"] == 0.97


def test_on_cpu_the_reference_is_not_timed(evaluations: list[str]) -> None:
    s = state(None, None).model_copy(update={"settings": RunSettings(device="cpu")})
    F.finalize(s)
    assert evaluations == []


def test_a_best_judged_in_rank_mode_is_retimed_in_full_on_a_gpu_only(evaluations: list[str]) -> None:
    ranked = gpu_verdict(1.5, kernel_names=["relu_scale_kernel"], timing_mode="rank")
    s = state(Candidate(source=good(1024)), ranked)
    final = s.model_copy(update=F.finalize(s))
    assert evaluations and evaluations[0] == good(1024)  # the delivered candidate, timed again in full
    assert final.best_verdict.timing_mode == "full" and final.best_verdict.speedup_vs_eager == 0.97
    evaluations.clear()
    cpu = s.model_copy(update={"settings": RunSettings(device="cpu"),
                               "best_verdict": ranked.model_copy(update={"timing_is_cpu": True})})
    F.finalize(cpu)
    assert evaluations == []  # interpreter timings are never speedups: nothing to re-time
