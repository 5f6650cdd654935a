"""Generator: writes the first candidate, and afterwards applies the planner's chosen skill once
per planned variant (the reviewer judges the round's candidates together)."""

from __future__ import annotations

from typing import Any

from ..authors.base import AuthorError, AuthorTask, SkillText, same_code
from ..state.graph_state import GraphState
from ..state.records import Attempt, Candidate, Plan, source_hash
from .runtime import get_author, get_index


def skill_text(skill_id: str) -> SkillText | None:
    """The skill's body and template source, for authors that read them (the LLM author)."""
    try:
        skill = get_index().get(skill_id)
    except Exception:  # an unknown id still reaches the author, which reports it
        return SkillText(id=skill_id)
    template = skill.path.parent / "template.py"
    return SkillText(id=skill.id, title=skill.title, body=skill.body,
                     template=template.read_text() if template.exists() else "")


def task_of(state: GraphState, **extra: Any) -> AuthorTask:
    s = state.settings
    return AuthorTask(problem=state.problem, device=s.device, precision=s.precision,
                      attempts=list(state.attempts), best=state.best, current=state.candidate,
                      profile=state.profile, **extra)


def _no_candidate(state: GraphState, plan: Plan | None, params: dict[str, Any], error: AuthorError | str,
                  ) -> Attempt:
    """The attempt of a variant (or first candidate) the author could not, or need not, build."""
    return Attempt(round=state.round, node="generator", skill_id=plan.skill_id if plan else None,
                   params=params, source_hash=source_hash(""), outcome="compile-error", stage="author",
                   error=str(error), tokens=getattr(error, "tokens", None))


def build_variants(state: GraphState, plan: Plan) -> tuple[list[Candidate], list[Attempt]]:
    """One candidate per planned variant, and an attempt for each variant dropped: the author
    failed, or its code equals the best candidate's or an earlier variant's (a repeat would spend
    an evaluation on nothing)."""
    author, task = get_author(state.settings), task_of(state, skill=skill_text(plan.skill_id))
    built: list[Candidate] = []
    dropped: list[Attempt] = []
    for params in plan.all_variants():
        try:
            cand = author.apply(task, plan.model_copy(update={"params": params}))
        except AuthorError as e:
            dropped.append(_no_candidate(state, plan, params, e))
            continue
        if state.best is not None and same_code(cand.source, state.best.source):
            why = f"skill {plan.skill_id} {variant_text(params)}changes nothing in the best candidate"
        else:
            twin = next((c for c in built if same_code(c.source, cand.source)), None)
            if twin is None:
                built.append(cand)
                continue
            why = f"skill {plan.skill_id} {variant_text(params)}generates the code of variant {twin.params}"
        dropped.append(_no_candidate(state, plan, params, why))
    return built, dropped


def variant_text(params: dict[str, Any]) -> str:
    return f"with {params} " if params else ""


def generator(state: GraphState) -> dict[str, Any]:
    plan = state.plan
    if plan is None:
        try:
            cand = get_author(state.settings).generate(task_of(state))
        except AuthorError as e:
            failed = _no_candidate(state, None, {}, e)
            return {"candidate": None, "candidates": [], "plan": None, "attempts": [failed], "repairs": 0}
        return {"candidate": cand, "candidates": [], "node": "generator", "plan": None, "repairs": 0}
    built, dropped = build_variants(state, plan)
    if not built:
        return {"candidate": None, "candidates": [], "plan": None, "attempts": dropped, "repairs": 0}
    # Several variants are judged together by the reviewer; one goes the single-candidate way.
    return {"candidate": built[0], "candidates": built if len(built) > 1 else [], "node": "generator",
            "plan": None, "attempts": dropped, "repairs": 0}
