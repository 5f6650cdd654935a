"""A candidate byte-identical to one already judged in this thread is not evaluated again: its
earlier verdict, as the attempts log kept it, stands (the reviewer logs it as a repeat)."""

from __future__ import annotations

from ..state.graph_state import GraphState, Verdict
from ..state.records import Attempt, Candidate, source_hash

NO_SOURCE = source_hash("")  # attempts where the author produced nothing carry this hash


def earlier_evaluation(state: GraphState, h: str) -> int | None:
    """Index of the attempt that already evaluated source hash `h` in this thread, if any."""
    for i, a in enumerate(state.attempts):
        if a.source_hash == h and h != NO_SOURCE and a.repeat_of is None and a.stage != "author":
            return i
    return None


def repeat_verdict(earlier: Attempt, index: int, cpu: bool) -> Verdict:
    """The earlier verdict of the same source, as the attempts log kept it, marked as a repeat."""
    return Verdict(correct=earlier.outcome == "correct", stage=earlier.stage,
                   reason=f"the same source as attempt {index} (round {earlier.round}): its verdict, "
                          "not evaluated again", failed_checks=earlier.failed_checks,
                   runtime_ms=earlier.runtime_ms, eager_ms=earlier.eager_ms, compile_ms=earlier.compile_ms,
                   timing_is_cpu=cpu)


def repeat_attempt(state: GraphState, cand: Candidate, index: int) -> Attempt:
    """The attempt logged for a repeat: the earlier one's outcome under this round and node."""
    earlier = state.attempts[index]
    return earlier.model_copy(update={"round": state.round, "node": state.node, "skill_id": cand.skill_id,
                                      "params": cand.params, "note": cand.note, "repeat_of": index,
                                      "tokens": cand.author_state.tokens, "eval_s": None})
