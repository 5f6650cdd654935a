"""Finalize delivers the best candidate pruned to what it launched, verified by one evaluation
(the one that re-times the best when its baselines were reused), or the unpruned file with the
reason; solution.py's header and report.json say which kernels run, from which skill, and sizes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelskill.graph.report import build_report, solution_header, solution_text
from kernelskill.nodes import finalize as F
from kernelskill.nodes.pruning import kernel_skills, where_verified
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402

PROBLEM = (FIXTURES / "relu_scale.py").read_text()
# good() plus a second kernel that only wide rows launch: the verified run never did.
TWO = good(1024).replace("class ModelNew", '''@triton.jit
def wide_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew''').replace("        relu_scale_kernel[", '''        if x.shape[-1] > 1 << 20:
            wide_kernel[(1,)](x, y, n, BLOCK=BLOCKSIZE)
            return y
        relu_scale_kernel['''.replace("BLOCKSIZE", "1024"))
SKILLS = {"relu_scale_kernel": "fused-elementwise", "wide_kernel": "fused-elementwise"}


def verdict(speedup: float = 1.5, correct: bool = True, kernels: tuple[str, ...] = ("relu_scale_kernel",),
            **kw: object) -> Verdict:
    return Verdict(correct=correct, stage="done" if correct else "correctness", runtime_ms=1.0 / speedup,
                   eager_ms=1.0, compile_ms=0.8, speedup_vs_eager=speedup, timing_is_cpu=False,
                   gpu_name="H200", kernel_names=list(kernels), reason=None if correct else "wrong output",
                   **kw)


def state(v: Verdict, device: str = "cuda") -> GraphState:
    best = Candidate(source=TWO, skill_id="fused-elementwise", author_state={"kernel_skills": SKILLS})
    return GraphState(problem=Problem(name="relu_scale", path="relu_scale.py", source=PROBLEM, size="small"),
                      settings=RunSettings(device=device, size="small"), best=best, best_verdict=v)


class Evaluator:
    """The evaluator's stand-in: answers the queued verdicts in order, records what it judged."""

    def __init__(self) -> None:
        self.queue: list[Verdict] = []
        self.seen: list[str] = []

    def __call__(self, _state: GraphState, source: str, baselines: bool) -> Verdict:
        assert baselines
        self.seen.append(source)
        return self.queue[len(self.seen) - 1]


@pytest.fixture
def ev(monkeypatch: pytest.MonkeyPatch) -> Evaluator:
    fake = Evaluator()
    monkeypatch.setattr(F, "evaluate_candidate", fake)
    return fake


def test_the_pruned_file_is_delivered_with_its_own_verdict_after_one_evaluation(ev: Evaluator) -> None:
    ev.queue += [verdict(1.4)]
    s = state(verdict(1.5))
    final = s.model_copy(update=F.finalize(s))
    assert len(ev.seen) == 1 and "def wide_kernel" not in ev.seen[0]  # the pruned file was judged
    assert final.pruning is not None and final.pruning.applied and final.best_verdict.speedup_vs_eager == 1.4
    text = solution_text(final, "t")
    assert "def wide_kernel" not in text and "raise RuntimeError(_PRUNED" in text
    header = solution_header(final, "t")
    assert "# verified for: relu_scale at small sizes (ROWS=33, COLS=70) on cuda\n" in header
    assert "relu_scale_kernel (skill fused-elementwise)" in header and "wide_kernel" not in header
    report = build_report(final, "t")
    assert report["solution_bytes"] == len(text.encode())
    assert report["solution_lines"] == len(text.splitlines())
    p = report["pruning"]
    assert p["applied"] and "wide_kernel" in p["removed"] and p["raises"] == 1
    assert p["lines_before"] == len(TWO.splitlines())
    assert p["bytes_after"] == len(final.pruning.source.encode())
    assert "source" not in p and report["kernels"] == {"relu_scale_kernel": "fused-elementwise"}


def test_a_pruned_file_that_fails_leaves_the_unpruned_one_and_says_so(ev: Evaluator) -> None:
    ev.queue += [verdict(correct=False)]
    s = state(verdict(1.5))
    final = s.model_copy(update=F.finalize(s))
    assert len(ev.seen) == 1 and final.best_verdict.speedup_vs_eager == 1.5
    assert solution_text(final, "t").endswith(TWO) and not final.pruning.applied
    assert "failed its evaluation" in build_report(final, "t")["pruning"]["note"]
    assert "failed its evaluation" in solution_header(final, "t")


def test_reused_baselines_cost_no_extra_evaluation_unless_the_pruned_file_fails(ev: Evaluator) -> None:
    ev.queue += [verdict(1.3)]
    s = state(verdict(1.5, baselines_reused=True))
    final = s.model_copy(update=F.finalize(s))
    assert len(ev.seen) == 1 and final.pruning.applied and final.best_verdict.speedup_vs_eager == 1.3
    ev.seen.clear()
    ev.queue[:] = [verdict(correct=False), verdict(1.2)]
    final = s.model_copy(update=F.finalize(s))
    assert [src == TWO for src in ev.seen] == [False, True]  # the pruned file, then the best re-timed
    assert not final.pruning.applied and final.best_verdict.speedup_vs_eager == 1.2


def test_a_candidate_that_launches_all_it_defines_is_not_evaluated_again(ev: Evaluator) -> None:
    s = state(verdict(1.5, kernels=("relu_scale_kernel", "wide_kernel")))
    final = s.model_copy(update=F.finalize(s))
    assert ev.seen == [] and not final.pruning.applied and "nothing to prune" in final.pruning.note
    assert "wide_kernel (skill fused-elementwise)" in solution_header(final, "t")


def test_where_and_provenance_read_the_problem_and_the_author_state() -> None:
    s = state(verdict())
    assert where_verified(s) == "relu_scale at small sizes (ROWS=33, COLS=70) on cuda"
    llm = Candidate(source=TWO, author="llm")
    assert kernel_skills(llm, ["k"]) == {"k": "llm author"}
    assert kernel_skills(s.best, ["relu_scale_kernel", "x"]) == {"relu_scale_kernel": "fused-elementwise",
                                                                 "x": "fused-elementwise"}
