"""One small interface, two implementations: who writes the code for a node.

`builtin` instantiates executable skill templates deterministically; `llm` asks a chat model.
Nodes call `generate` (first candidate), `apply` (one planned skill on the best candidate) and
`repair` (fix the current candidate after a failed evaluation); the planner asks `can_apply` and
`touches` (does a skill change the profile's target kernel) before it spends a round.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..state.records import Attempt, Candidate, Plan, Problem, Profile


class AuthorError(Exception):
    """The author could not produce a candidate (one line: why)."""


def code_of(src: str) -> str:
    """The source as `same_code` compares it: parsed and unparsed without the module docstring
    (an unparsable source as it is)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    if ast.get_docstring(tree) is not None:
        tree.body = tree.body[1:]
    return ast.unparse(tree)


def same_code(a: str, b: str) -> bool:
    """Do two candidate sources run the same code? Module docstrings (which name the templates
    used) and formatting do not count; unparsable sources compare as text."""
    return a == b or code_of(a) == code_of(b)


@dataclass
class SkillText:
    """What an author sees of a skill: its id, title, body and optional template source."""

    id: str
    title: str = ""
    body: str = ""
    template: str = ""


@dataclass
class AuthorTask:
    problem: Problem
    device: str = "cuda"
    precision: str = "default"
    """The run's precision policy (eval/precision.py): which fp32 work may run in TF32."""
    attempts: list[Attempt] = field(default_factory=list)
    best: Candidate | None = None
    current: Candidate | None = None
    profile: Profile | None = None
    skill: SkillText | None = None
    error: str | None = None
    """The last evaluation's failure (stage and reason), for repair."""
    repairs_left: int | None = None
    """Repairs the budget still allows after this one's candidate (None: unknown)."""


class Author(Protocol):
    name: str

    def generate(self, task: AuthorTask) -> Candidate: ...

    def apply(self, task: AuthorTask, plan: Plan) -> Candidate: ...

    def repair(self, task: AuthorTask) -> Candidate: ...

    def can_apply(self, skill_id: str, task: AuthorTask | None = None,
                  params: dict[str, Any] | None = None) -> bool:
        """Whether this author can apply the skill; with a task, whether applying it (with these
        variant parameters) to the task's best candidate would change anything (a no-op, or code
        the task already judged, would spend a round for nothing)."""
        ...

    def touches(self, skill_id: str, task: AuthorTask, params: dict[str, Any] | None,
                kernel: str) -> bool | None:
        """Whether applying the skill (these variant parameters) to the task's best candidate
        changes kernel `kernel` or how it is launched; None: unknown. The default for authors that
        cannot tell without writing the code (LLM, scripted): an author that subclasses this
        interface inherits it."""
        return None
