"""A round's near-winner (faster than the best by min_gain on the medians, not by the spread of
single runs), or a winner by less than CLEAR_WIN, is decided by a run-off: the best's source and
the contender's judged again in one batch, compared by min_gain and by how sure the two medians
are (nodes/runoff.py). No evaluator runs here: evaluate_many is replaced by one that answers from
a script."""

from __future__ import annotations

from typing import Any

import pytest
from kernelskill.eval.types import EvalOptions, EvalResult
from kernelskill.nodes import reviewer as R
from kernelskill.nodes.runoff import median_doubt, near_win, runoff_won
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Attempt, Candidate, Problem


def v(ms: float | None, noise: float = 0.01, runs: int | None = 50) -> Verdict:
    return Verdict(correct=ms is not None, stage="done", runtime_ms=ms, noise=noise, timed_runs=runs,
                   timing_is_cpu=False)


def test_a_spread_of_single_runs_is_not_the_doubt_of_their_median() -> None:
    # level2/02 on an H100: the first candidate full-timed at 0.878 ms with a 16% spread, a variant
    # at 0.798 ms with 18.5%: no win by the spread of single runs, a near-win by the medians.
    best, variant = v(0.8777, 0.1645, 200), v(0.798, 0.1853, 50)
    assert not R.is_better(variant, best, 1.02)
    assert near_win(variant, best, 1.02)
    assert median_doubt(best) == pytest.approx(0.93 * 0.1645 / 200 ** 0.5)
    assert median_doubt(v(1.0, 0.2, None)) == 0.2  # runs unknown (an old checkpoint): the spread itself
    # The run-off decides on two medians timed together.
    assert runoff_won(v(0.79), v(0.83), 1.02)
    assert not runoff_won(v(0.82), v(0.83), 1.02)  # 1.2%: under min_gain
    assert not runoff_won(v(0.79, 0.3, 10), v(0.83, 0.3, 10), 1.02)  # medians of 10 noisy runs: unsure
    assert not near_win(v(0.99), best, 1.02) and not near_win(v(None), best, 1.02)
    cpu = Verdict(correct=True, stage="done", runtime_ms=0.5, timing_is_cpu=True)
    assert not near_win(cpu, best, 1.02)  # interpreter timings rank nothing


def _cand(tile: int) -> Candidate:
    return Candidate(source=f"# tile {tile}\nimport torch\n", skill_id="s", params={"tile": tile})


def _state() -> GraphState:
    first = Attempt(round=0, node="generator", source_hash="first", outcome="correct", stage="done",
                    runtime_ms=1.0)
    return GraphState(problem=Problem(name="p", path="p.py", source="import torch\n"),
                      settings=RunSettings(device="cuda", min_gain=1.02), round=1,
                      best=Candidate(source="best source"), best_verdict=v(1.0, 0.16, 200),
                      baselines=[2.0, 1.5], attempts=[first], candidates=[_cand(1), _cand(2), _cand(3)],
                      candidate=_cand(1))


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {"calls": [], "learned": []}

    def fake_many(problem: str, sources: list[str], opts: EvalOptions, **kw: Any) -> list[EvalResult]:
        seen["calls"].append((sources, opts.timing_mode))
        answer = seen["answers"].pop(0)
        return [EvalResult(correct=t is not None, stage="done" if t is not None else "correctness",
                           runtime_ms=t, noise=noise, timed_runs=50, timing_is_cpu=False)
                for t, noise in answer]

    monkeypatch.setattr(R, "evaluate_many", fake_many)
    monkeypatch.setattr(R, "_learn", lambda state, cand, v, base=None: seen["learned"].append(
        (cand.params.get("tile"), v.runtime_ms, base)))
    return seen


def test_a_near_winner_that_wins_its_run_off_becomes_the_best(script: dict) -> None:
    # The round: tile 1 at 0.95 ms and tile 2 at 0.93 ms with a 20% spread (no win by is_better),
    # tile 3 wrong. The run-off: the best again at 1.00 ms, tile 2 again at 0.90 ms.
    script["answers"] = [[(0.95, 0.2), (0.93, 0.2), (None, 0.0)], [(1.0, 0.01), (0.9, 0.01)]]
    update = R.reviewer(_state())
    (round_sources, _), (raced, mode) = script["calls"]
    assert raced == ["best source", _cand(2).source] and mode == "rank"
    assert update["best"].params == {"tile": 2} and update["best_verdict"].runtime_ms == 0.9
    notes = [a.note for a in update["attempts"]]
    assert "run-off" in notes[-1] and "won" in notes[-1]  # the contender's re-judge, logged last
    assert any(n.startswith("the best so far, judged again") for n in notes)
    assert [a.params.get("tile") for a in update["attempts"][:3]] == [1, 2, 3]  # the round's three
    assert (2, 0.9, 1.0) in script["learned"]  # its gain is the run-off's: 1.0 / 0.9


def test_a_near_winner_that_loses_its_run_off_changes_nothing(script: dict) -> None:
    script["answers"] = [[(0.95, 0.2), (0.93, 0.2), (None, 0.0)], [(1.0, 0.01), (0.99, 0.01)]]
    update = R.reviewer(_state())
    assert "best" not in update and len(script["calls"]) == 2
    assert "not a measured gain" in update["attempts"][-2].note
    assert update["attempts"][-1].params == {"tile": 1}  # the one the graph goes on with, last


def test_a_win_by_less_than_a_clear_win_is_raced_again(script: dict) -> None:
    # level1/01 on an H100: a variant rank-timed 12% under the best's full median, beyond both
    # spreads (is_better says yes); judged together again it is the best's equal.
    state = _state()
    state.best_verdict = v(1.0, 0.01, 200)
    script["answers"] = [[(0.88, 0.01), (0.95, 0.01), (None, 0.0)], [(0.90, 0.01), (0.895, 0.01)]]
    assert R.is_better(v(0.88), state.best_verdict, 1.02)
    update = R.reviewer(state)
    assert "best" not in update and len(script["calls"]) == 2
    assert script["calls"][1][0] == ["best source", _cand(1).source]
    assert "not a measured gain" in update["attempts"][-2].note
    script["calls"].clear()
    script["answers"] = [[(0.88, 0.01), (0.95, 0.01), (None, 0.0)], [(0.90, 0.01), (0.80, 0.01)]]
    assert R.reviewer(state)["best_verdict"].runtime_ms == 0.80  # the run-off's median, not 0.88


def test_no_run_off_for_a_clear_win_or_a_clear_loss(script: dict) -> None:
    script["answers"] = [[(0.5, 0.01), (1.2, 0.01), (None, 0.0)]]
    assert R.reviewer(_state())["best"].params == {"tile": 1} and len(script["calls"]) == 1
    script["calls"].clear()
    script["answers"] = [[(1.1, 0.01), (0.995, 0.01), (None, 0.0)]]
    assert "best" not in R.reviewer(_state()) and len(script["calls"]) == 1
