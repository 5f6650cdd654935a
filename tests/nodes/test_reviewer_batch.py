"""The reviewer judges a round's variants together: one evaluate_many call in 'rank' mode with the
thread's first baselines, one attempt per variant (the one the graph goes on with logged last),
the fastest correct variant that beats the best kept, and the first failure left for a repair
when none is correct. No evaluator runs here."""

from __future__ import annotations

from typing import Any

import pytest
from kernelskill.eval.types import EvalOptions, EvalResult
from kernelskill.nodes import reviewer as R
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Attempt, Candidate, Problem


def _cand(tile: int) -> Candidate:
    return Candidate(source=f"# tile {tile}\nimport torch\n", skill_id="s", params={"tile": tile})


def _state() -> GraphState:
    first = Attempt(round=0, node="generator", source_hash="first", outcome="correct", stage="done",
                    runtime_ms=1.0)
    best = Verdict(correct=True, stage="done", runtime_ms=1.0, eager_ms=2.0, compile_ms=1.5,
                   timing_is_cpu=False)
    return GraphState(problem=Problem(name="p", path="p.py", source="import torch\n"),
                      settings=RunSettings(device="cuda", min_gain=1.02), round=1, best=Candidate(source="b"),
                      best_verdict=best, baselines=[2.0, 1.5], attempts=[first],
                      candidates=[_cand(1), _cand(2), _cand(3)], candidate=_cand(1))


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {"learned": []}

    def fake_many(problem: str, sources: list[str], opts: EvalOptions, **kw: Any) -> list[EvalResult]:
        seen["opts"], seen["names"] = opts, kw["candidate_names"]
        times = seen["times"]
        return [EvalResult(correct=t is not None, stage="done" if t is not None else "correctness",
                           runtime_ms=t, reason="" if t is not None else "wrong values", timing_is_cpu=False,
                           tuning={f"k{i}/t.autotune.json": f"{t}"})
                for i, t in enumerate(times)]

    monkeypatch.setattr(R, "evaluate_many", fake_many)
    monkeypatch.setattr(R, "_learn", lambda state, cand, v, **kw: seen["learned"].append(cand.params["tile"]))
    return seen


def test_the_fastest_variant_that_beats_the_best_is_kept_and_every_variant_is_logged(judged: dict) -> None:
    judged["times"] = [0.9, 0.5, None]  # tile 2 is fastest; tile 3 is wrong
    update = R.reviewer(_state())
    opts = judged["opts"]
    assert opts.timing_mode == "rank" and opts.known_baselines == [2.0, 1.5] and len(judged["names"]) == 3
    assert update["best"].params == {"tile": 2} and update["best_verdict"].timing_mode == "rank"
    assert update["best_verdict"].baselines_reused and update["candidates"] == []
    assert [a.params["tile"] for a in update["attempts"]] == [1, 3, 2]  # the kept one last
    assert [a.outcome for a in update["attempts"]] == ["correct", "incorrect", "correct"]
    assert sorted(judged["learned"]) == [1, 2, 3]  # every variant's application ends this round


def test_with_no_correct_variant_the_first_failure_goes_to_repair(judged: dict) -> None:
    judged["times"] = [None, None, None]
    update = R.reviewer(_state())
    assert "best" not in update and update["candidate"].params == {"tile": 1}
    assert update["attempts"][-1].params == {"tile": 1} and not update["verdict"].correct
    assert sorted(judged["learned"]) == [2, 3]  # the first is learned once its repairs end


def test_pick_keeps_the_earlier_variant_inside_the_noise() -> None:
    def j(t: float | None, repeat: int | None = None) -> Any:
        v = Verdict(correct=t is not None, stage="done", runtime_ms=t, timing_is_cpu=False)
        a = Attempt(round=1, node="generator", source_hash=str(t), outcome="correct" if t else "incorrect",
                    repeat_of=repeat)
        return Candidate(source=str(t)), v, a

    best = Verdict(correct=True, stage="done", runtime_ms=1.0, timing_is_cpu=False)
    a, b, c = j(0.8), j(0.79), j(0.5, repeat=0)
    winner, shown = R.pick([a, b, c], best, 1.02)
    assert winner is a and shown is a  # 0.79 is not 2 % faster than 0.8; a repeat never wins
    winner, shown = R.pick([j(None), j(1.5)], best, 1.02)
    assert winner is None and shown[1].runtime_ms == 1.5  # correct but slower: profiled, not kept


def test_correct_variants_tuning_is_kept_for_the_next_rank_evaluations(judged: dict) -> None:
    """Autotuning records of correct candidates join the thread's (eval/judge/tuning.py); the next
    'rank' evaluation starts with them; a failing candidate's records are dropped."""
    judged["times"] = [0.9, None, 0.5]
    state = _state().model_copy(update={"tuning": {"k9/t.autotune.json": "old"}})
    assert judged.get("opts") is None
    update = R.reviewer(state)
    assert judged["opts"].tuning == {"k9/t.autotune.json": "old"}
    assert update["tuning"] == {"k9/t.autotune.json": "old", "k0/t.autotune.json": "0.9",
                                "k2/t.autotune.json": "0.5"}
    assert "tuning" not in update["verdict"].model_dump()  # kept in the thread's state, not per verdict
    full = R._options(state, True, "full", None)
    assert full.tuning is None  # the delivered number is never timed on carried picks


def test_the_breakdown_is_taken_where_the_profiler_may_read_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate's per-kernel breakdown (a torch.profiler pass) costs seconds per evaluation:
    a 'full' one takes it on a GPU; a 'rank' one only where the profiling child cannot run."""
    gpu, cpu = RunSettings(device="cuda"), RunSettings(device="cpu")
    monkeypatch.setattr(R.shutil, "which", lambda name: "/usr/bin/ncu")
    assert R.wants_breakdown(gpu, "full") and not R.wants_breakdown(gpu, "rank")
    assert not R.wants_breakdown(cpu, "full")
    assert R.wants_breakdown(gpu.model_copy(update={"profile_budget_s": 0.0}), "rank")
    monkeypatch.setattr(R.shutil, "which", lambda name: None)
    assert R.wants_breakdown(gpu, "rank")
    assert R._options(_state(), False, "rank", None).profile
