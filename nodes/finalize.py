"""Finalize: closes the run with a reason and decides which file is delivered.

The best candidate is pruned to the kernels its verified run launched (nodes/pruning.py) and the
pruned file is evaluated; when it passes, it is the delivered file and its verdict the reported
one. Otherwise, if the best candidate's verdict came from a 'rank' evaluation or its speedups were
computed against baselines from an earlier run, it is evaluated once more on a GPU with the full
protocol and its own baselines, so the reported ratios come from one full run. When the
delivered file is the reference itself (nothing correct beat eager), it is evaluated too on a GPU:
the user's module, unchanged, under the policy's flags, so its reported speedup (about 1.0x) is
measured, never assumed.
"""

from __future__ import annotations

from typing import Any

from ..state.graph_state import GraphState
from .pruning import prune_best, pruning_of_best
from .reviewer import evaluate_candidate


def solution_choice(state: GraphState) -> tuple[str, bool, str]:
    """(source, is_reference, why). The best candidate when it is correct and, on a GPU, faster
    than eager; otherwise the reference itself, unchanged, said plainly."""
    from ..authors.builtin.emit import assemble_verbatim

    best, v = state.best, state.best_verdict
    if best is not None and best.author == "reference":  # the repairer's last fallback level won
        why = "no correct candidate of ours was found"
    elif best is not None and v is not None and v.correct:
        pruned = pruning_of_best(state)
        source = pruned.source if pruned and pruned.applied and pruned.source else best.source
        if v.timing_is_cpu:
            return source, False, "best correct candidate (CPU run: speed not measured on a GPU)"
        if v.speedup_vs_eager is not None and v.speedup_vs_eager > 1.0:
            return source, False, f"best correct candidate, {v.speedup_vs_eager:.2f}x vs eager"
        why = "no correct candidate was faster than PyTorch eager"
    else:
        why = "no correct candidate was found"
    doc = (f"kernelskill found nothing better for {state.problem.name}: {why}.\n\n"
           "This file is the reference Model itself, renamed ModelNew and otherwise unchanged: it runs\n"
           "under the caller's precision flags, as the user's module does.")
    return assemble_verbatim(state.problem.source, doc), True, why


REFERENCE_WON = "the reference is the solution"


def finalize(state: GraphState) -> dict[str, Any]:
    update: dict[str, Any] = {}
    best, v = state.best, state.best_verdict
    usable = not (state.verdict is not None and state.verdict.usage_error)
    # A verdict timed to rank ('rank', reused baselines) is re-timed in full before it is delivered;
    # on the CPU timings are never speedups, so there is nothing to re-time.
    retime = best is not None and v is not None and state.settings.device == "cuda" and (
        v.baselines_reused or v.timing_mode == "rank")
    if best is not None and v is not None and v.correct and usable and not solution_choice(state)[1]:
        # Where the best is re-timed anyway, the pruned file is evaluated instead: one evaluation.
        update["pruning"], pruned_verdict = prune_best(state, v, evaluate_candidate)
        if pruned_verdict is not None:
            update["best_verdict"], retime = pruned_verdict, False
    if retime:
        again = evaluate_candidate(state, best.source, baselines=True)
        update["best_verdict"] = again
        if not again.correct:  # it passed once and failed now: not a solution anyone should use
            update["best"] = None
            update["stop_reason"] = f"the best candidate failed its final evaluation: {again.reason}"
    if state.settings.device == "cuda" and usable:
        source, is_reference, _ = solution_choice(state.model_copy(update=update))
        if is_reference:
            update["reference_verdict"] = evaluate_candidate(state, source, baselines=True)
    final_best = update.get("best", best)
    ours_failed = final_best is not None and final_best.author == "reference"
    if state.stop_reason or "stop_reason" in update:
        # A run that stopped for budget on the repairer's reference level says so plainly too.
        reason = update.get("stop_reason", state.stop_reason)
        if ours_failed and REFERENCE_WON not in reason:
            update["stop_reason"] = f"{reason}; no candidate of ours was correct, {REFERENCE_WON}"
        return update
    if not usable:
        update["stop_reason"] = f"unusable problem: {state.verdict.reason}"
    elif final_best is None:
        update["stop_reason"] = f"no correct candidate found; {REFERENCE_WON}"
    elif ours_failed:
        update["stop_reason"] = f"no candidate of ours was correct; {REFERENCE_WON}"
    else:
        update["stop_reason"] = "done"
    return update
