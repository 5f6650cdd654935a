"""The run's outputs, derived from the final state: solution.py and report.json."""

from __future__ import annotations

from typing import Any

from ..nodes.finalize import solution_choice
from ..nodes.pruning import kernel_skills, pruning_of_best, where_verified
from ..state.graph_state import GraphState, Verdict
from .rounds import round_records


def delivered_verdict(state: GraphState) -> tuple[Verdict | None, bool]:
    """(the measurement of the file delivered, whether it is the reference): the best candidate's
    verdict, or the kept reference's own evaluation (None until finalize has timed it)."""
    _, is_reference, _ = solution_choice(state)
    return (state.reference_verdict if is_reference else state.best_verdict), is_reference


def slower_than_eager(v: Verdict | None) -> bool | None:
    """Whether the delivered file measured slower than eager on a GPU; None ("n/a") where nothing
    was measured as a speedup: a CPU run (interpreter timings are never speedups), or no timing."""
    if v is None or v.timing_is_cpu or v.speedup_vs_eager is None:
        return None
    return v.speedup_vs_eager < 1.0


def _timings(v: Verdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {"correct": v.correct, "runtime_ms": v.runtime_ms, "eager_ms": v.eager_ms,
            "compile_ms": v.compile_ms, "speedup_vs_eager": v.speedup_vs_eager,
            "speedup_vs_compile": v.speedup_vs_compile, "floor_ms": v.floor_ms,
            "custom_kernels": v.custom_kernels, "kernel_names": v.kernel_names,
            "timing_is_cpu": v.timing_is_cpu, "gpu": v.gpu_name, "baselines_in": v.baselines_in}


def precision_of(state: GraphState) -> dict[str, Any]:
    """The policy the run was judged and timed under, with the flags it set on both sides."""
    from ..eval.precision import policy

    return {"policy": state.settings.precision, "flags": policy(state.settings.precision).flags()}


def _provenance(state: GraphState, is_reference: bool, v: Verdict | None) -> str:
    """Header lines: the shapes the file was verified for, the kernels it launches and the skill
    each came from, and what pruning did."""
    where = f"# verified for: {where_verified(state)}\n"
    if is_reference:
        if v is None or not v.correct:  # never claimed: no evaluation of this file passed
            where = f"# not verified: no evaluation passed on {where_verified(state)}\n"
        return where + "# launches no Triton kernel of ours: the reference module itself\n"
    kernels = kernel_skills(state.best, v.kernel_names if v else [])
    listed = ", ".join(f"{k} (skill {s})" for k, s in kernels.items()) or "none"
    text = where + f"# Triton kernels it launches there ({len(kernels)}): {listed}\n"
    p = pruning_of_best(state)
    if p is not None:
        text += (f"# pruned to what runs: {p.lines_before} -> {p.lines_after} lines; other shapes raise "
                 "RuntimeError (re-run kernelskill for them)\n" if p.applied else f"# {p.note}\n")
    return text


def solution_header(state: GraphState, thread_id: str) -> str:
    """Comment lines put above solution.py: the policy it was verified under, the shapes, the
    kernels it launches with their skills, and what it measured."""
    prec = precision_of(state)
    flags = ", ".join(f"{k}={v}" for k, v in prec["flags"].items())
    v, is_reference = delivered_verdict(state)
    if v is None or v.timing_is_cpu:
        measured = "not timed on a GPU (correctness only)" if not is_reference or v else \
            "the reference itself, not timed on a GPU"
    else:
        vs_c = f", {v.speedup_vs_compile:.2f}x torch.compile" if v.speedup_vs_compile else ""
        measured = f"{v.speedup_vs_eager or 0:.2f}x eager{vs_c} on {v.gpu_name}"
    return (f"# kernelskill solution for {state.problem.name} (thread {thread_id})\n"
            f"# precision policy: {prec['policy']} ({flags}; candidate, yardstick and baselines alike)\n"
            f"# measured: {measured}\n" + _provenance(state, is_reference, v))


def solution_text(state: GraphState, thread_id: str) -> str:
    """solution.py as written: the header, then the delivered source."""
    return solution_header(state, thread_id) + solution_choice(state)[0]


def build_report(state: GraphState, thread_id: str, unfinished: str | None = None,
                 resume: str | None = None) -> dict[str, Any]:
    """report.json. `unfinished`: why the run has not ended (a new best mid-run, an interrupt),
    said as its stop_reason, with `resume`, the command that goes on with it."""
    _, is_reference, why = solution_choice(state)
    v = state.best_verdict
    delivered, _ = delivered_verdict(state)
    text = solution_text(state, thread_id)
    p = pruning_of_best(state)
    kernels = {} if is_reference else kernel_skills(state.best, delivered.kernel_names if delivered else [])
    return {
        "problem": state.problem.name,
        "problem_path": state.problem.path,
        "thread_id": thread_id,
        "settings": state.settings.model_dump(),
        "precision": precision_of(state),
        "stop_reason": unfinished or state.stop_reason,
        "finished": unfinished is None,
        "resume_command": resume if unfinished else None,
        "solution_is_reference": is_reference,
        "solution_note": why,
        "slower_than_eager": slower_than_eager(delivered),
        "rounds": state.round,
        "elapsed_s": round(state.elapsed_s, 2),
        "best": None if v is None else {
            **(_timings(v) or {}),
            "skill_id": state.best.skill_id if state.best else None,
            "templates": list(state.best.author_state.templates) if state.best else [],
        },
        "delivered": _timings(delivered),
        "solution_bytes": len(text.encode()),
        "solution_lines": len(text.splitlines()),
        "kernels": kernels,
        "pruning": None if p is None or is_reference else p.model_dump(exclude={"source"}),
        "profile": state.profile.model_dump() if state.profile else None,
        "attempts": [a.model_dump() for a in state.attempts],
        "per_round": round_records(state),
    }
