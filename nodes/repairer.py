"""Repairer: fixes a candidate that failed to compile, crashed or came out wrong.

It sees the error, the attempts so far and the skill being applied (through the author task);
the built-in author falls back to safer variants of the same template, the LLM author rewrites.

Repairs never go round in circles: a candidate whose source or error repeats an earlier failure
of its lineage moves one fallback level down (`fallback_level`), and the lowest level is the
reference verbatim, so a run whose reference runs always ends with a correct candidate.
"""

from __future__ import annotations

from typing import Any

from ..authors.base import AuthorError
from ..authors.builtin.emit import assemble_verbatim
from ..state.author_state import AuthorState
from ..state.graph_state import GraphState
from ..state.records import Attempt, Candidate, source_hash
from .generator import skill_text, task_of
from .runtime import get_author

AUTHOR, LAST_RESORT, REFERENCE = 0, 1, 2
"""Fallback levels: the author's repair; its last-resort repair (told it has one repair left: the
built-in author then puts every suspect region back into PyTorch); the reference verbatim."""


def _head(error: str | None) -> str:
    return (error or "").strip().splitlines()[0] if (error or "").strip() else ""


def lineage(attempts: list[Attempt]) -> list[Attempt]:
    """The attempts since the generator's last candidate (that one included): what repairs saw."""
    starts = [i for i, a in enumerate(attempts) if a.node == "generator"]
    return attempts[starts[-1]:] if starts else list(attempts)


def repeats_a_failure(attempts: list[Attempt]) -> bool:
    """Pure: did the latest attempt fail the way an earlier one of its lineage did (the same
    source, or the same error line)? Then repairing at the same level again is a loop."""
    line = lineage(attempts)
    if not line or line[-1].outcome == "correct" or line[-1].stage == "author":
        return False
    last = line[-1]
    if last.repeat_of is not None:
        return True
    head = _head(last.error)
    return bool(head) and any(_head(a.error) == head for a in line[:-1] if a.outcome != "correct")


def fallback_level(state: GraphState) -> int:
    """Pure: the level this repair works at. One below the current candidate's own when it repeats
    a failure; the reference when nothing is correct yet and the repair budget is spent."""
    cand = state.candidate
    level = cand.author_state.fallback_level if cand is not None else AUTHOR
    if repeats_a_failure(state.attempts):
        level += 1
    if state.best is None and state.repairs >= state.settings.repairs:
        level = REFERENCE
    return min(level, REFERENCE)


def reference_candidate(state: GraphState, why: str) -> Candidate:
    """The user's Model, renamed ModelNew and otherwise unchanged: correct whenever the reference runs."""
    doc = (f"kernelskill's fallback for {state.problem.name}: the reference Model verbatim, renamed "
           f"ModelNew.\n\n{why}")
    return Candidate(source=assemble_verbatim(state.problem.source, doc), author="reference",
                     note=f"fallback: the reference verbatim ({why})",
                     author_state=AuthorState(fallback_level=REFERENCE, verbatim=True))


def repairer(state: GraphState) -> dict[str, Any]:
    cand = state.candidate
    v = state.verdict
    error = f"[{v.stage}] {v.reason}\n{v.log_tail[-2000:]}" if v is not None else "unknown failure"
    level = fallback_level(state)
    done = {"node": "repairer", "repairs": state.repairs + 1}
    if level == REFERENCE and state.best is not None:  # the best so far stands: this lineage ends
        return _give_up(state, "repairs repeated an earlier failure at every fallback level")
    if level == REFERENCE:
        why = ("a repair repeated an earlier failure" if repeats_a_failure(state.attempts)
               else "no correct candidate within the repair budget")
        return {"candidate": reference_candidate(state, why), **done}
    skill = skill_text(cand.skill_id) if cand is not None and cand.skill_id else None
    left = 1 if level == LAST_RESORT else state.settings.repairs - state.repairs
    try:
        task = task_of(state, error=error, skill=skill, repairs_left=left)
        fixed = get_author(state.settings).repair(task)
    except AuthorError as e:
        if state.best is None:  # nothing correct to fall back on: the reference is
            return {"candidate": reference_candidate(state, f"the author gave up: {e}"), **done}
        return _give_up(state, str(e), getattr(e, "tokens", None))
    fixed.author_state = fixed.author_state.model_copy(update={"fallback_level": level})
    if level == LAST_RESORT:
        fixed.note = f"{fixed.note} (last resort: a repair repeated an earlier failure)"
    return {"candidate": fixed, **done}


def _give_up(state: GraphState, why: str, tokens: int | None = None) -> dict[str, Any]:
    """No candidate: the attempt says why, the repair budget is spent, the planner moves on."""
    cand = state.candidate
    gave_up = Attempt(round=state.round, node="repairer", skill_id=cand.skill_id if cand else None,
                      params=cand.params if cand else {}, source_hash=source_hash(""),
                      outcome="compile-error", stage="author", error=why, tokens=tokens)
    return {"candidate": None, "attempts": [gave_up], "repairs": state.settings.repairs}
