"""Routing is pure: each decision from a hand-built state, nothing run."""

from __future__ import annotations

from kernelskill.graph import routing
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Candidate, Plan, Problem

P = Problem(name="p", path="p.py", source="")
C = Candidate(source="x")


def state(**kw: object) -> GraphState:
    return GraphState(problem=P, settings=RunSettings(repairs=2), **kw)


def test_generator_routes_to_reviewer_or_onwards() -> None:
    assert routing.after_generator(state(candidate=C)) == "reviewer"
    assert routing.after_generator(state(candidate=None)) == "finalize"
    assert routing.after_generator(state(candidate=None, best=C)) == "planner"


def test_review_routes_compile_errors_to_repairer_and_correct_to_profiler() -> None:
    bad = Verdict(correct=False, stage="compile", reason="boom")
    assert routing.after_review(state(verdict=bad, repairs=0)) == "repairer"
    assert routing.after_review(state(verdict=bad, repairs=1)) == "repairer"
    # Repairs spent and nothing correct: one more repair, the reference verbatim, unless it failed.
    assert routing.after_review(state(verdict=bad, repairs=2, candidate=C)) == "repairer"
    ref = Candidate(source="r", author="reference")
    assert routing.after_review(state(verdict=bad, repairs=2, candidate=ref)) == "finalize"
    assert routing.after_review(state(verdict=bad, repairs=2, best=C)) == "planner"
    good = Verdict(correct=True, stage="done")
    assert routing.after_review(state(verdict=good)) == "profiler"


def test_broken_problem_finalizes_at_once() -> None:
    usage = Verdict(correct=False, stage="load", usage_error=True, reason="no get_inputs")
    assert routing.after_review(state(verdict=usage, best=C)) == "finalize"


def test_repair_and_plan_routes() -> None:
    assert routing.after_repair(state(candidate=C)) == "reviewer"
    assert routing.after_repair(state(candidate=None, best=C)) == "planner"
    assert routing.after_repair(state(candidate=None)) == "finalize"
    assert routing.after_plan(state(plan=Plan(skill_id="s"))) == "generator"
    assert routing.after_plan(state(plan=None)) == "finalize"


def test_a_repeated_candidate_goes_to_the_planner_or_a_lower_fallback_level() -> None:
    from kernelskill.state.records import Attempt

    bad = Verdict(correct=False, stage="compile", reason="same as before")
    rep = Attempt(round=1, node="repairer", source_hash="abc", outcome="compile-error", repeat_of=0)
    assert routing.after_review(state(verdict=bad, repairs=0, best=C, attempts=[rep])) == "planner"
    # With nothing correct yet the repairer takes it, one fallback level down.
    assert routing.after_review(state(verdict=bad, repairs=0, attempts=[rep], candidate=C)) == "repairer"
    ref = Candidate(source="r", author="reference")
    assert routing.after_review(state(verdict=bad, repairs=0, attempts=[rep], candidate=ref)) == "finalize"
    good = Verdict(correct=True, stage="done")
    assert routing.after_review(state(verdict=good, best=C, attempts=[rep])) == "planner"
