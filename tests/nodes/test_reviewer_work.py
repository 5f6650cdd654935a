"""The reference's FLOPs and bytes are counted once per thread: later evaluations are handed the
earlier count (EvalOptions.work), so their judge skips the FLOP counter and its torch._dynamo
import (4-6 s of an evaluation on an H200 host)."""

from __future__ import annotations

import pytest
from kernelskill.eval.types import EvalOptions, EvalResult
from kernelskill.nodes import reviewer as R
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Problem

SRC = "import torch\n"


def state(**kw: object) -> GraphState:
    return GraphState(problem=Problem(name="p", path="p.py", source=SRC),
                      settings=RunSettings(device="cuda"), **kw)


def test_the_first_counted_work_is_reused_and_none_before() -> None:
    assert R.known_work(state()) is None
    uncounted = Verdict(correct=False, stage="compile")
    assert R.known_work(state(verdict=uncounted)) is None
    counted = Verdict(correct=True, stage="done", flops=2.0e9, bytes=3.0e8)
    assert R.known_work(state(verdict=uncounted, best_verdict=counted)) == [2.0e9, 3.0e8]
    assert R.known_work(state(reference_verdict=counted)) == [2.0e9, 3.0e8]
    # The convolutions' share travels too; a verdict checkpointed before it was counted gives the
    # pair alone, which the evaluator reads as no convolution FLOPs (roofline.Work.given).
    with_conv = Verdict(correct=True, stage="done", flops=2.0e9, bytes=3.0e8, conv_flops=1.5e9)
    assert R.known_work(state(best_verdict=with_conv)) == [2.0e9, 3.0e8, 1.5e9]


def test_the_reviewer_hands_the_count_to_the_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[EvalOptions] = []

    def fake(problem: str, source: str, opts: EvalOptions, **kw: object) -> EvalResult:
        seen.append(opts)
        return EvalResult(correct=True, stage="done")

    monkeypatch.setattr(R, "evaluate", fake)
    R.evaluate_candidate(state(), SRC, baselines=True)
    R.evaluate_candidate(state(best_verdict=Verdict(correct=True, stage="done", flops=5.0, bytes=7.0)),
                         SRC, baselines=False)
    assert [o.work for o in seen] == [None, [5.0, 7.0]]
