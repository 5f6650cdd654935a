"""Planner: reads the profile, asks long-term memory for skills, picks exactly one.

Skills come from the Chroma index queried with the profile (gated by the precision policy),
in rank order; a skill is skipped if the author cannot apply it (or applying it would change
nothing in the best candidate: a no-op would spend a round), or if this (skill, parameters) pair
was already tried on this task - a success is already in the best candidate, a failure is a dead
end, and the attempts log remembers both across resumes.
"""

from __future__ import annotations

import time
from typing import Any

from ..eval.precision import policy
from ..state.graph_state import GraphState
from ..state.records import Plan
from .generator import task_of
from .runtime import get_author, get_index

CANDIDATE_SKILLS = 12


def budget_left(state: GraphState, now: float) -> str | None:
    """Pure: why no further round may start, or None."""
    s = state.settings
    if state.round >= s.rounds:
        return f"round budget spent ({s.rounds} rounds)"
    if state.started_at and now - state.started_at > s.wall_clock_s:
        return f"time budget spent ({s.wall_clock_s:.0f} s)"
    return None


def choose(hits: list[Any], tried: set[tuple[str | None, str]], can_apply: Any,
           in_best: set[str]) -> Plan | None:
    """Pure: the first hit the author can apply, not already part of the best candidate, whose
    default parameters were not tried yet."""
    for hit in hits:
        plan = Plan(skill_id=hit.id, params={}, reason=f"{hit.title} (score {hit.score:.2f}): {hit.reason}")
        # Cheap checks first: can_apply may dry-run a build.
        if hit.id in in_best or (plan.skill_id, repr(sorted(plan.params.items()))) in tried:
            continue
        if can_apply(hit.id):
            return plan
    return None


def planner(state: GraphState) -> dict[str, Any]:
    stop = budget_left(state, time.time())
    if stop:
        return {"plan": None, "stop_reason": stop}
    if state.best is None or state.profile is None:
        return {"plan": None, "stop_reason": "no correct candidate to optimize"}
    tried = {a.key() for a in state.attempts if a.skill_id}
    matmul_tf32 = policy(state.settings.precision).matmul_tf32
    hits = get_index().query(state.profile, k=CANDIDATE_SKILLS, allow_tf32=matmul_tf32,
                             training=True, gpu=state.best_verdict.gpu_name if state.best_verdict else None)
    in_best = set(state.best.author_state.templates)
    author, task = get_author(state.settings), task_of(state)
    plan = choose(hits, tried, lambda skill_id: author.can_apply(skill_id, task), in_best)
    if plan is None:
        return {"plan": None, "stop_reason": "no applicable skill left for this profile"}
    return {"plan": plan, "round": state.round + 1}
