"""Finalize: closes the run with a reason; the report is derived from state (graph/report.py).

If the best candidate's speedups were computed against baselines from an earlier run, it is
evaluated once more with its own baselines, so the reported ratios come from one run.
"""

from __future__ import annotations

from typing import Any

from ..state.graph_state import GraphState
from .reviewer import evaluate_candidate


def finalize(state: GraphState) -> dict[str, Any]:
    update: dict[str, Any] = {}
    best, v = state.best, state.best_verdict
    if best is not None and v is not None and v.baselines_reused:
        again = evaluate_candidate(state, best.source, baselines=True)
        update["best_verdict"] = again
        if not again.correct:  # it passed once and failed now: not a solution anyone should use
            update["best"] = None
            update["stop_reason"] = f"the best candidate failed its final evaluation: {again.reason}"
            return update
    if state.stop_reason:
        return update
    if state.verdict is not None and state.verdict.usage_error:
        update["stop_reason"] = f"unusable problem: {state.verdict.reason}"
    elif best is None:
        update["stop_reason"] = "no correct candidate found; the reference is the solution"
    else:
        update["stop_reason"] = "done"
    return update
