"""Where the graph goes next: small pure functions of the state, unit-tested without running."""

from __future__ import annotations

from typing import Literal

from ..state.graph_state import GraphState


def after_generator(state: GraphState) -> Literal["reviewer", "planner", "finalize"]:
    if state.candidate is not None:
        return "reviewer"
    return "planner" if state.best is not None else "finalize"


def needs_floor(state: GraphState) -> bool:
    """Nothing correct yet and the failing candidate is not the reference itself: the repairer's
    last level (the reference verbatim) must run before the run may end without a solution."""
    cand = state.candidate
    return state.best is None and cand is not None and cand.author != "reference"


def after_review(state: GraphState) -> Literal["profiler", "repairer", "planner", "finalize"]:
    v = state.verdict
    if v is None or v.usage_error:
        return "finalize"
    if state.attempts and state.attempts[-1].repeat_of is not None:  # judged before: move on
        if not v.correct and needs_floor(state):
            return "repairer"  # which moves down a fallback level: the same source never comes back
        return "planner" if state.best is not None else "finalize"
    if v.correct:
        return "profiler"
    if state.repairs < state.settings.repairs or needs_floor(state):
        return "repairer"
    return "planner" if state.best is not None else "finalize"


def after_repair(state: GraphState) -> Literal["reviewer", "planner", "finalize"]:
    if state.candidate is not None:
        return "reviewer"
    return "planner" if state.best is not None else "finalize"


def after_plan(state: GraphState) -> Literal["generator", "finalize"]:
    return "generator" if state.plan is not None else "finalize"
