"""The run's outputs, derived from the final state: solution.py and report.json."""

from __future__ import annotations

from typing import Any

from ..state.graph_state import GraphState


def solution_choice(state: GraphState) -> tuple[str, bool, str]:
    """(source, is_reference, why). The best candidate when it is correct and, on a GPU, faster
    than eager; otherwise the reference itself, said plainly."""
    from ..authors.builtin.emit import assemble_verbatim

    best, v = state.best, state.best_verdict
    if best is not None and v is not None and v.correct:
        if v.timing_is_cpu:
            return best.source, False, "best correct candidate (CPU run: speed not measured on a GPU)"
        if v.speedup_vs_eager is not None and v.speedup_vs_eager > 1.0:
            return best.source, False, f"best correct candidate, {v.speedup_vs_eager:.2f}x vs eager"
        why = "no correct candidate was faster than PyTorch eager"
    elif best is None:
        why = "no correct candidate was found"
    else:
        why = "no correct candidate was found"
    doc = (f"kernelskill found nothing better for {state.problem.name}: {why}.\n\n"
           "This file is the reference Model itself, renamed ModelNew.")
    return assemble_verbatim(state.problem.source, doc), True, why


def build_report(state: GraphState, thread_id: str) -> dict[str, Any]:
    _, is_reference, why = solution_choice(state)
    v = state.best_verdict
    return {
        "problem": state.problem.name,
        "problem_path": state.problem.path,
        "thread_id": thread_id,
        "settings": state.settings.model_dump(),
        "stop_reason": state.stop_reason,
        "solution_is_reference": is_reference,
        "solution_note": why,
        "rounds": state.round,
        "elapsed_s": round(state.elapsed_s, 2),
        "best": None if v is None else {
            "correct": v.correct, "runtime_ms": v.runtime_ms, "eager_ms": v.eager_ms,
            "compile_ms": v.compile_ms, "speedup_vs_eager": v.speedup_vs_eager,
            "speedup_vs_compile": v.speedup_vs_compile, "floor_ms": v.floor_ms,
            "custom_kernels": v.custom_kernels, "kernel_names": v.kernel_names,
            "timing_is_cpu": v.timing_is_cpu, "gpu": v.gpu_name,
            "skill_id": state.best.skill_id if state.best else None,
            "templates": (state.best.author_state or {}).get("templates", []) if state.best else [],
        },
        "profile": state.profile.model_dump() if state.profile else None,
        "attempts": [a.model_dump() for a in state.attempts],
    }
