"""Repairer: fixes a candidate that failed to compile, crashed or came out wrong.

It sees the error, the attempts so far and the skill being applied (through the author task);
the built-in author falls back to safer variants of the same template, the LLM author rewrites.
"""

from __future__ import annotations

from typing import Any

from ..authors.base import AuthorError
from ..state.graph_state import GraphState
from ..state.records import Attempt, source_hash
from .generator import skill_text, task_of
from .runtime import get_author


def repairer(state: GraphState) -> dict[str, Any]:
    cand = state.candidate
    v = state.verdict
    error = f"[{v.stage}] {v.reason}\n{v.log_tail[-2000:]}" if v is not None else "unknown failure"
    skill = skill_text(cand.skill_id) if cand is not None and cand.skill_id else None
    try:
        task = task_of(state, error=error, skill=skill, repairs_left=state.settings.repairs - state.repairs)
        fixed = get_author(state.settings).repair(task)
    except AuthorError as e:
        gave_up = Attempt(round=state.round, node="repairer", skill_id=cand.skill_id if cand else None,
                          params=cand.params if cand else {}, source_hash=source_hash(""),
                          outcome="compile-error", stage="author", error=str(e),
                          tokens=getattr(e, "tokens", None))
        return {"candidate": None, "attempts": [gave_up], "repairs": state.settings.repairs}
    return {"candidate": fixed, "node": "repairer", "repairs": state.repairs + 1}
