"""A deterministic author that replays scripted candidate sources: tests and demos need no LLM.

The next source is chosen by how many candidates the log already holds, so the author is
stateless and a resumed thread continues the script where it stopped.
"""

from __future__ import annotations

from typing import Any

from ..state.records import Candidate, Plan
from .base import Author, AuthorError, AuthorTask


class ScriptedAuthor(Author):
    name = "scripted"

    def __init__(self, script: list[str]):
        self.script = list(script)

    def can_apply(self, skill_id: str, task: AuthorTask | None = None,
                  params: dict[str, Any] | None = None) -> bool:
        return True

    def _next(self, task: AuthorTask, note: str) -> Candidate:
        i = sum(1 for a in task.attempts if a.node in ("generator", "repairer") and a.stage != "author")
        if i >= len(self.script):
            raise AuthorError(f"the script has no reply {i + 1} (it holds {len(self.script)})")
        return Candidate(source=self.script[i], author="scripted", note=f"{note} (scripted reply {i + 1})")

    def generate(self, task: AuthorTask) -> Candidate:
        return self._next(task, "first candidate")

    def apply(self, task: AuthorTask, plan: Plan) -> Candidate:
        cand = self._next(task, f"applied {plan.skill_id}")
        cand.skill_id, cand.params = plan.skill_id, dict(plan.params)
        return cand

    def repair(self, task: AuthorTask) -> Candidate:
        cand = self._next(task, "repair")
        if task.current is not None:
            cand.skill_id, cand.params = task.current.skill_id, dict(task.current.params)
        return cand
