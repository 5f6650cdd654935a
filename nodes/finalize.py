"""Finalize: closes the run with a reason; the report is derived from state (graph/report.py)."""

from __future__ import annotations

from typing import Any

from ..state.graph_state import GraphState


def finalize(state: GraphState) -> dict[str, Any]:
    if state.stop_reason:
        return {}
    if state.verdict is not None and state.verdict.usage_error:
        return {"stop_reason": f"unusable problem: {state.verdict.reason}"}
    if state.best is None:
        return {"stop_reason": "no correct candidate found; the reference is the solution"}
    return {"stop_reason": "done"}
