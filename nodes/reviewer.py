"""Reviewer: runs the candidate through the evaluator (in a child process) and logs the attempt.

A correct candidate that beats the best so far (by `min_gain` and the measured timing noise, or
by being the first correct one) becomes the new best; a candidate byte-identical to one already
judged in this thread is not evaluated again (its earlier verdict is logged as a repeat); the
best correct candidate is never lost. Skill experience is
written back to long-term memory after every attempt that applied a skill.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from ..eval.api import evaluate
from ..eval.types import EvalOptions
from ..state.graph_state import GraphState, Verdict
from ..state.records import ATTEMPT_FIELDS, Attempt, source_hash
from .runtime import get_index

_OUTCOME = {"static": "static-reject", "load": "compile-error", "compile": "compile-error",
            "correctness": "incorrect", "timing": "incorrect"}


def outcome_of(v: Verdict) -> str:
    if v.correct:
        return "correct"
    if "timeout" in v.failed_checks:
        return "timeout"
    if v.stage == "correctness" and "runtime_error" in v.failed_checks:
        return "runtime-error"
    if "crash" in v.failed_checks:
        return "runtime-error"
    return _OUTCOME.get(v.stage, "runtime-error")


def speed(v: Verdict | None) -> float | None:
    return v.runtime_ms if v is not None and v.correct else None


def is_better(new: Verdict, best: Verdict | None, min_gain: float) -> bool:
    """Pure: does `new` replace `best`? The first correct candidate always does; a later one must
    be faster by more than `min_gain` and by more than the run-to-run noise either timing
    measured (a 1 % "gain" inside a 4 % spread is noise, not a new best)."""
    if not new.correct:
        return False
    if best is None or not best.correct or best.runtime_ms is None:
        return True
    if new.runtime_ms is None:
        return False
    need = max(min_gain, 1.0 + (new.noise or 0.0), 1.0 + (best.noise or 0.0))
    return new.runtime_ms * need < best.runtime_ms


_NO_SOURCE = source_hash("")  # attempts where the author produced nothing carry this hash


def earlier_evaluation(state: GraphState, h: str) -> int | None:
    """Index of the attempt that already evaluated source hash `h` in this thread, if any."""
    for i, a in enumerate(state.attempts):
        if a.source_hash == h and h != _NO_SOURCE and a.repeat_of is None and a.stage != "author":
            return i
    return None


def repeat_verdict(earlier: Attempt, index: int, cpu: bool) -> Verdict:
    """The earlier verdict of the same source, as the attempts log kept it, marked as a repeat."""
    return Verdict(correct=earlier.outcome == "correct", stage=earlier.stage,
                   reason=f"the same source as attempt {index} (round {earlier.round}): its verdict, "
                          "not evaluated again", failed_checks=earlier.failed_checks,
                   runtime_ms=earlier.runtime_ms, eager_ms=earlier.eager_ms, compile_ms=earlier.compile_ms,
                   timing_is_cpu=cpu)


def _repeat(state: GraphState, cand: Any, index: int) -> dict[str, Any]:
    earlier = state.attempts[index]
    attempt = earlier.model_copy(update={"round": state.round, "node": state.node, "skill_id": cand.skill_id,
                                         "params": cand.params, "note": cand.note, "repeat_of": index,
                                         "tokens": cand.author_state.tokens, "eval_s": None})
    return {"verdict": repeat_verdict(earlier, index, state.settings.device != "cuda"), "attempts": [attempt],
            "elapsed_s": time.time() - state.started_at if state.started_at else 0.0}


def known_work(state: GraphState) -> list[float] | None:
    """Pure: [FLOPs, bytes] of the reference's forward as an earlier evaluation in this thread
    counted them (one problem, size and policy per thread), so later ones skip the count."""
    for v in (state.best_verdict, state.verdict, state.reference_verdict):
        if v is not None and v.flops is not None and v.bytes is not None:
            return [v.flops, v.bytes]
    return None


def evaluate_candidate(state: GraphState, source: str, baselines: bool) -> Verdict:
    s = state.settings
    opts = EvalOptions(device=s.device, size=s.size, trials=s.trials, timeout_s=s.eval_timeout_s,
                       baselines=baselines, precision=s.precision, profile=s.device == "cuda",
                       work=known_work(state))
    result = evaluate(state.problem.source, source, opts, problem_name=state.problem.path,
                      candidate_name=f"candidate_{source_hash(source)}.py")
    return Verdict.of(result)


def reuse_baselines(v: Verdict, earlier: Verdict | None) -> Verdict:
    """Pure: give `v` the eager / compile times of an earlier run, marked as reused."""
    if not v.correct or earlier is None or earlier.eager_ms is None or not v.runtime_ms:
        return v
    update: dict[str, Any] = {"eager_ms": earlier.eager_ms, "compile_ms": earlier.compile_ms,
                              "baselines_reused": True}
    if not v.timing_is_cpu:  # CPU timings under Triton's interpreter are no speedups (eval's rule)
        update["speedup_vs_eager"] = earlier.eager_ms / v.runtime_ms
        update["speedup_vs_compile"] = earlier.compile_ms / v.runtime_ms if earlier.compile_ms else None
    return v.model_copy(update=update)


def reviewer(state: GraphState) -> dict[str, Any]:
    cand = state.candidate
    assert cand is not None, "reviewer needs a candidate"
    s = state.settings
    index = earlier_evaluation(state, source_hash(cand.source))
    if index is not None:  # byte-identical to a judged candidate: its verdict stands, the planner moves on
        return _repeat(state, cand, index)
    # Baselines are timed once per run (torch.compile costs seconds to a minute); later
    # candidates are ranked against the same numbers and finalize re-times the winner.
    known = state.best_verdict if state.best_verdict and state.best_verdict.eager_ms else None
    t0 = time.perf_counter()
    v = evaluate_candidate(state, cand.source, baselines=s.baselines and known is None)
    eval_s = round(time.perf_counter() - t0, 2)
    if s.baselines and known is not None:
        v = reuse_baselines(v, known)
    error = None
    if not v.correct:
        error = f"[{v.stage}] {v.reason}" + (f"\n{v.log_tail[-1500:]}" if v.log_tail else "")
    kept = {k: getattr(v, k) for k in ATTEMPT_FIELDS}
    if v.timing_is_cpu:  # CPU timings under Triton's interpreter are no speedups (eval's rule)
        kept.update(speedup_vs_eager=None, speedup_vs_compile=None)
    attempt = Attempt(round=state.round, node=state.node, skill_id=cand.skill_id, params=cand.params,
                      source_hash=source_hash(cand.source), outcome=outcome_of(v), error=error, **kept,
                      profile_signature=state.profile.signature if state.profile else None, note=cand.note,
                      tokens=cand.author_state.tokens, eval_s=eval_s)
    update: dict[str, Any] = {"verdict": v, "attempts": [attempt],
                              "elapsed_s": time.time() - state.started_at if state.started_at else 0.0}
    better = is_better(v, state.best_verdict, s.min_gain)
    if better:
        update["best"], update["best_verdict"] = cand, v
    # A skill's application ends when its candidate is correct or its repairs are spent.
    if cand.skill_id and (v.correct or state.repairs >= s.repairs):
        _learn(state, cand.skill_id, v)
    return update


def _learn(state: GraphState, skill_id: str, v: Verdict) -> None:
    """Experience: did applying this skill help on this kind of kernel, on this GPU?"""
    base = speed(state.best_verdict)
    gain = base / v.runtime_ms if v.correct and base and v.runtime_ms else None
    profile = state.profile
    structure = profile.structures[0] if profile and profile.structures else "multi-kernel-graph"
    gpu = v.gpu_name or "cpu"
    try:
        get_index().record_outcome(skill_id, structure, gpu, gain, v.correct)
    except Exception as e:  # learning must never break a run; say so on stderr
        print(f"kernelskill: could not record skill experience: {e}", file=sys.stderr)
