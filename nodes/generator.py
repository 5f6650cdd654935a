"""Generator: writes the first candidate, and applies the planner's chosen skill afterwards."""

from __future__ import annotations

from typing import Any

from ..authors.base import AuthorError, AuthorTask, SkillText, same_code
from ..state.graph_state import GraphState
from ..state.records import Attempt, source_hash
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


def generator(state: GraphState) -> dict[str, Any]:
    author = get_author(state.settings)
    plan = state.plan
    try:
        if plan is None:
            cand = author.generate(task_of(state))
        else:
            cand = author.apply(task_of(state, skill=skill_text(plan.skill_id)), plan)
        if plan is not None and state.best is not None and same_code(cand.source, state.best.source):
            raise AuthorError(f"skill {plan.skill_id} changes nothing in the best candidate")
    except AuthorError as e:
        failed = Attempt(round=state.round, node="generator", skill_id=plan.skill_id if plan else None,
                         params=plan.params if plan else {}, source_hash=source_hash(""),
                         outcome="compile-error", stage="author", error=str(e),
                         tokens=getattr(e, "tokens", None))
        return {"candidate": None, "plan": None, "attempts": [failed], "repairs": 0}
    return {"candidate": cand, "node": "generator", "plan": None, "repairs": 0}
