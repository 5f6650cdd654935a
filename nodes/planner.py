"""Planner: reads the profile, asks long-term memory for skills, picks one move per round.

A move is one skill and up to `settings.variants` of its variants (parameter sets declared in its
SKILL.md, ordered by their experience statistics), each built and judged in the same round. Skills
come from the Chroma index queried with the profile (gated by the precision policy), those
addressing the target kernel's limiter first (nodes/limiter.py), and, where the profile names that
kernel, those whose code changes it or its launch (the author's dry run, `Author.touches`) before
those that leave it as it is, whatever bottleneck word they declare; when they are exhausted the planner
falls back to untried variants of applied skills, then to any template skill the author can apply
(nodes/moves.py says when it may stop). A variant is skipped if it was already tried on this task (a
success is in the best candidate, a failure is a dead end; the attempts log remembers both across
resumes) or if it would change nothing in the best candidate (a no-op would spend a round).
"""

from __future__ import annotations

import time
from typing import Any

from ..eval.precision import policy
from ..state.graph_state import GraphState
from ..state.output import plural
from .generator import task_of
from .moves import (
    Option,
    aim,
    by_limiter,
    by_target,
    first_untried,
    lost_here,
    plan_round,
    target_limiter,
    variant_key,
)
from .runtime import get_author, get_index

CANDIDATE_SKILLS = 12


def budget_left(state: GraphState, now: float) -> str | None:
    """Pure: why no further round may start, or None."""
    s = state.settings
    if state.round >= s.rounds:
        return f"round budget spent ({plural(s.rounds, 'round')})"
    if state.started_at and now - state.started_at > s.wall_clock_s:
        return f"time budget spent ({s.wall_clock_s:.0f} s)"
    return None


def applied_skills(state: GraphState) -> list[str]:
    """Skills in the best candidate, then the others this task applied, in first-use order."""
    in_best = list(state.best.author_state.templates) if state.best else []
    tried = [a.skill_id for a in state.attempts if a.skill_id]
    return list(dict.fromkeys([*in_best, *tried]))


def planner(state: GraphState) -> dict[str, Any]:
    stop = budget_left(state, time.time())
    if stop:
        return {"plan": None, "stop_reason": stop}
    if state.best is None or state.profile is None:
        return {"plan": None, "stop_reason": "no correct candidate to optimize"}
    s, profile, index = state.settings, state.profile, get_index()
    allow_tf32 = policy(s.precision).matmul_tf32
    gpu = state.best_verdict.gpu_name if state.best_verdict else None
    hits = index.query(profile, k=CANDIDATE_SKILLS, allow_tf32=allow_tf32, training=True, gpu=gpu)
    limiter, why = target_limiter(profile)
    applied = applied_skills(state)
    author, task = get_author(s), task_of(state)

    def variants(skill_id: str) -> list[dict[str, Any]]:
        return index.variants(skill_id, profile.structures, gpu)

    tried = {a.key() for a in state.attempts if a.skill_id}
    target = profile.target_kernel
    # A skill applied before (in the best, or tried this task) waits for the fallbacks: a new
    # skill is a bigger move than another variant of one already tried. A declared bottleneck
    # word is no evidence the code reaches the target kernel (H100, level3/05: two GEMM rounds
    # "addressed" a depthwise kernel they left byte-identical), so the author's dry run decides:
    # one per ranked skill, only with a target, and the author keeps the source for `differs`.
    ranked: list[Option] = []
    touched: dict[str, bool | None] = {}
    for hit in by_limiter(hits, limiter):
        if hit.id in applied:
            continue
        vs = variants(hit.id)
        first = first_untried(hit.id, vs, tried) if target else None
        if target and first is not None:
            touched[hit.id] = author.touches(hit.id, task, first, target)
        note = aim(limiter, why, hit.skill.bottlenecks, target, touched.get(hit.id))
        ranked.append(Option(hit.id, f"{hit.title} (score {hit.score:.2f}): {hit.reason}{note}", "ranked",
                             vs))

    def differs(skill_id: str, params: dict[str, Any]) -> bool:
        return author.can_apply(skill_id, task, params)

    # An applied skill whose next variant changes the target kernel joins the ranked skills that do,
    # ahead of those the dry run found leaving it as it is (H100, level3/05: the depthwise template's
    # variants waited behind ranked skills that never reached its kernel). Its default is the best's
    # own code, so the variant asked about is the first untried one that changes the best at all.
    # The skill that wrote the target kernel goes first among them (level3/05: channels-last-layout,
    # earlier in the template list, spent a round on the depthwise kernel's layout before the
    # depthwise template's own variants, which won).
    owner = state.best.author_state.kernel_skills.get(target) if target and state.best else None
    fallbacks: list[Option] = []
    for sid in sorted(applied, key=lambda sid: sid != owner):
        vs = variants(sid)
        first = next((v for v in vs if variant_key(sid, v) not in tried and differs(sid, v)), None) \
            if target else None
        if first is not None and author.touches(sid, task, first, target) is True:
            touched[sid] = True
            why_here = aim(limiter, why, (), target, True)
            ranked.append(Option(sid, f"untried variants of {sid}, already applied{why_here}", "variant", vs))
        else:
            fallbacks.append(Option(sid, f"untried variants of {sid}, already applied (ranked skills "
                                    "exhausted)", "variant", vs))
    ranked = by_target(ranked, touched)
    # Policy gates still hold (no TF32 skill under a strict run); profile gates do not: the
    # author's dry run below is the test of whether a template applies to this candidate.
    fallbacks += [Option(sk.id, f"{sk.title}: a template the author can apply (ranked skills and variants "
                         "exhausted)", "template", variants(sk.id))
                  for sk in index.allowed(allow_tf32=allow_tf32) if sk.id not in applied
                  and author.can_apply(sk.id)]

    def loser(skill_id: str, params: dict[str, Any]) -> bool:
        return lost_here(state.attempts, skill_id, params, timed=s.device == "cuda") or \
            index.known_loser(skill_id, params, profile.structures, gpu)

    plan, why_not = plan_round(ranked, fallbacks, tried, differs, s.variants, profile.headroom, loser)
    if plan is None:
        return {"plan": None, "stop_reason": why_not}
    plan = plan.model_copy(update={"round": state.round + 1, "best_ms": state.best_verdict.runtime_ms
                                   if state.best_verdict else None})
    return {"plan": plan, "round": state.round + 1, "plans": [plan]}
