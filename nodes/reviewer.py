"""Reviewer: runs the round's candidates through the evaluator (in child processes) and logs one
attempt each.

A round's variants are judged together (one eval.api.evaluate_many call); a correct
candidate that beats the best so far (by `min_gain` and the measured timing noise, or by being the
first correct one) becomes the new best, the fastest such variant of the round; a candidate
byte-identical to one already judged in this thread is not evaluated again (its earlier verdict is
logged as a repeat); the best correct candidate is never lost. Timing: the thread's first
evaluation runs the full protocol and times eager and torch.compile; later ones reuse those
baselines (EvalOptions.known_baselines) and time only as much as ranking needs ('rank'), starting
from the autotuning picks of the thread's correct candidates (GraphState.tuning, eval/judge/tuning.py)
instead of re-tuning shared kernels; finalize re-times the delivered candidate in full on a GPU,
with a cache of its own. Skill experience, per variant, is written back
to long-term memory after every attempt that applied a skill.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any

from ..eval.api import evaluate, evaluate_many
from ..eval.judge.tuning import merge
from ..eval.types import EvalOptions, handed_work
from ..skill_index.stats import CPU
from ..state.graph_state import GraphState, RunSettings, Verdict
from ..state.records import ATTEMPT_FIELDS, Attempt, Candidate, source_hash
from .repeats import earlier_evaluation, repeat_attempt, repeat_verdict
from .runoff import RUN_OFF, clear_win, near_win, runoff_won
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
    measured (a 1 % "gain" inside a 4 % spread is noise, not a new best). Timings under the CPU
    interpreter rank nothing (they time the interpreter, and differ run to run): there the first
    correct candidate stays, so a CPU run delivers the same solution every time."""
    if not new.correct:
        return False
    if best is None or not best.correct or best.runtime_ms is None:
        return True
    if new.timing_is_cpu or best.timing_is_cpu:
        return False
    if new.runtime_ms is None:
        return False
    need = max(min_gain, 1.0 + (new.noise or 0.0), 1.0 + (best.noise or 0.0))
    return new.runtime_ms * need < best.runtime_ms


def known_work(state: GraphState) -> list[float] | None:
    """Pure: [FLOPs, bytes, convolution FLOPs] of the reference's forward as an earlier evaluation
    in this thread counted them (one problem, size and policy per thread), so later ones skip the
    count. A verdict checkpointed before convolutions were counted apart gives the pair alone (the
    evaluator then counts no convolution FLOPs: eval/timing/roofline.Work.given)."""
    return next((w for v in (state.best_verdict, state.verdict, state.reference_verdict)
                 if (w := handed_work(v)) is not None), None)


def timing_mode(state: GraphState) -> str:
    """Pure: 'full' for the thread's first evaluation, 'rank' for every later candidate (ranking
    against the best needs fewer timed runs; the delivered one is re-timed in full)."""
    return "rank" if any(a.judged for a in state.attempts) else "full"


def known_baselines(state: GraphState) -> list[float | None] | None:
    """Pure: the eager / torch.compile times this thread's first timed evaluation measured (same
    problem, size, policy and device), to be reused; None before one, or without baselines."""
    return list(state.baselines) if state.settings.baselines and state.baselines else None


def wants_breakdown(settings: RunSettings, mode: str) -> bool:
    """Pure: does this evaluation take the candidate's per-kernel breakdown (a torch.profiler pass
    in the candidate process, ~5 s of an H100 'rank' evaluation of ~11 s, 2026-12-07,
    problems/measurements/h100-2026-12-07-side-by-side/)? The profiler node reads it only for a new
    best, and only where its own profiling child (Nsight Compute) does not run: a 'full'
    evaluation (a thread's first; finalize's) always takes it, a 'rank' one only where that child
    cannot run here (no ncu, or profiling disabled)."""
    if settings.device != "cuda":
        return False
    return mode == "full" or settings.profile_budget_s <= 0 or shutil.which("ncu") is None


def _options(state: GraphState, baselines: bool, mode: str, known: list[float | None] | None) -> EvalOptions:
    s = state.settings
    return EvalOptions(device=s.device, size=s.size, trials=s.trials, timeout_s=s.eval_timeout_s,
                       baselines=baselines, precision=s.precision, profile=wants_breakdown(s, mode),
                       work=known_work(state), known_baselines=known, timing_mode=mode,
                       tuning=state.tuning if mode == "rank" else None)


def _verdict(result: Any, mode: str, known: list[float | None] | None) -> Verdict:
    return Verdict.of(result).model_copy(update={"timing_mode": mode, "baselines_reused": known is not None})


def evaluate_candidate(state: GraphState, source: str, baselines: bool, mode: str = "full",
                       known: list[float | None] | None = None) -> Verdict:
    """One candidate; by default the full protocol with its own baselines (finalize's re-time)."""
    result = evaluate(state.problem.source, source, _options(state, baselines, mode, known),
                      problem_name=state.problem.path, candidate_name=f"candidate_{source_hash(source)}.py")
    return _verdict(result, mode, known)


def evaluate_batch(state: GraphState, sources: list[str], mode: str,
                   known: list[float | None] | None) -> list[Verdict]:
    """A round's candidates in one evaluate_many call (each in a judge of its own, on a GPU side by
    side), a verdict each, in order."""
    s = state.settings
    opts = _options(state, s.baselines, mode, known)
    # Side by side on a GPU (eval/batch.py); on the CPU the interpreter's work already fills the cores.
    results = evaluate_many(state.problem.source, sources, opts, problem_name=state.problem.path,
                            candidate_names=[f"candidate_{source_hash(src)}.py" for src in sources],
                            parallel=s.parallel_judges if s.device == "cuda" else 1)
    return [_verdict(r, mode, known) for r in results]


def attempt_of(state: GraphState, cand: Candidate, v: Verdict, eval_s: float | None) -> Attempt:
    """The attempt logged for an evaluated candidate (speedups None under CPU timing)."""
    error = None
    if not v.correct:
        error = f"[{v.stage}] {v.reason}" + (f"\n{v.log_tail[-1500:]}" if v.log_tail else "")
    kept = {k: getattr(v, k) for k in ATTEMPT_FIELDS}
    if v.timing_is_cpu:  # CPU timings under Triton's interpreter are no speedups (eval's rule)
        kept.update(speedup_vs_eager=None, speedup_vs_compile=None)
    return Attempt(round=state.round, node=state.node, skill_id=cand.skill_id, params=cand.params,
                   source_hash=source_hash(cand.source), outcome=outcome_of(v), error=error, **kept,
                   profile_signature=state.profile.signature if state.profile else None, note=cand.note,
                   tokens=cand.author_state.tokens, eval_s=eval_s)


Judged = tuple[Candidate, Verdict, Attempt]


def judge(state: GraphState, batch: list[Candidate]) -> list[Judged]:
    """Each candidate's verdict and attempt: repeats from the log, the rest evaluated together."""
    s = state.settings
    earlier = [earlier_evaluation(state, source_hash(c.source)) for c in batch]
    fresh = [c.source for c, e in zip(batch, earlier, strict=True) if e is None]
    mode, known = timing_mode(state), known_baselines(state)
    t0 = time.perf_counter()
    if len(fresh) > 1:
        verdicts = evaluate_batch(state, fresh, mode, known)
    else:
        verdicts = [evaluate_candidate(state, src, s.baselines, mode, known) for src in fresh]
    eval_s = round((time.perf_counter() - t0) / max(1, len(fresh)), 2)
    out: list[Judged] = []
    it = iter(verdicts)
    for cand, index in zip(batch, earlier, strict=True):
        if index is None:
            v = next(it)
            out.append((cand, v, attempt_of(state, cand, v, eval_s)))
        else:
            v = repeat_verdict(state.attempts[index], index, s.device != "cuda")
            out.append((cand, v, repeat_attempt(state, cand, index)))
    return out


def pick(judged: list[Judged], best: Verdict | None, min_gain: float) -> tuple[Judged | None, Judged]:
    """Pure: (the new best, if any: the candidate that beats the best and every variant before it;
    the one the graph goes on with: the new best, else the first correct, else the first failing
    evaluated one, which a repair may fix). Repeats never become the best."""
    winner = None
    for j in judged:
        if j[2].repeat_of is None and is_better(j[1], best, min_gain):
            winner, best = j, j[1]
    fresh = [j for j in judged if j[2].repeat_of is None]
    shown = winner or next((j for j in fresh if j[1].correct), None) or (fresh or judged)[0]
    return winner, shown


def reviewer(state: GraphState) -> dict[str, Any]:
    batch = state.candidates or ([state.candidate] if state.candidate is not None else [])
    assert batch, "reviewer needs a candidate"
    s = state.settings
    judged = judge(state, batch)
    winner, shown = pick(judged, state.best_verdict, s.min_gain)
    rerun: list[Judged] = []
    if winner is None or not clear_win(winner[1], state.best_verdict):
        # A near-winner, or a win an evaluation's difference could explain: a run-off decides.
        raced, rerun = run_off(state, judged)
        if rerun:
            winner = raced
        shown = winner or shown
    # The one the graph goes on with is logged last: routing and repairs read the latest attempt.
    logged = [j for j in judged + rerun if j is not shown]
    update: dict[str, Any] = {"verdict": shown[1], "candidate": shown[0], "candidates": [],
                              "attempts": [j[2] for j in logged] + [shown[2]],
                              "elapsed_s": time.time() - state.started_at if state.started_at else 0.0}
    if winner is not None:
        update["best"], update["best_verdict"] = winner[0], winner[1]
    tuning = state.tuning
    for _, v, a in judged:
        if a.repeat_of is None and v.correct and v.tuning:
            tuning = merge(tuning, v.tuning)
    if tuning is not state.tuning:
        update["tuning"] = tuning
    if state.baselines is None:
        timed = next((v for _, v, a in judged if a.repeat_of is None and v.eager_ms is not None), None)
        if timed is not None:
            update["baselines"] = [timed.eager_ms, timed.compile_ms]
    contender = rerun[1][0] if rerun else None
    for j in judged:
        cand, v, a = j
        # A skill's application ends when its candidate is correct or its repairs are spent; a
        # variant the graph does not go on with ends here.
        ends = v.correct or j is not shown or state.repairs >= s.repairs
        if cand.skill_id and a.repeat_of is None and ends:
            if cand is contender:  # its gain is the run-off's: both timed under the same conditions
                _learn(state, cand, rerun[1][1], base=speed(rerun[0][1]))
            else:
                _learn(state, cand, v)
    return update


def run_off(state: GraphState, judged: list[Judged]) -> tuple[Judged | None, list[Judged]]:
    """The fastest near-winner of the round and the best so far judged again in one batch: (the
    contender's re-judged triple when it won, else None; both re-judged triples, the best's
    first)."""
    s, best = state.settings, state.best
    near = [j for j in judged if j[2].repeat_of is None and near_win(j[1], state.best_verdict, s.min_gain)]
    if best is None or not near:
        return None, []
    cand, v, _ = min(near, key=lambda j: j[1].runtime_ms)
    again = evaluate_batch(state, [best.source, cand.source], "rank", known_baselines(state))
    won = runoff_won(again[1], again[0], s.min_gain)
    said = (f"run-off: {again[1].runtime_ms or float('nan'):.4f} ms against the best's "
            f"{again[0].runtime_ms or float('nan'):.4f} ms, judged together: "
            f"{'won' if won else 'not a measured gain'}")
    rerun = [(best, again[0], attempt_of(state, best, again[0], None).model_copy(
                 update={"node": RUN_OFF, "note": f"the best so far, judged again for a {said}"})),
             (cand, again[1], attempt_of(state, cand, again[1], None).model_copy(
                 update={"node": RUN_OFF, "note": f"{cand.note}; {said}"}))]
    return (rerun[1] if won else None), rerun


def _learn(state: GraphState, cand: Candidate, v: Verdict, base: float | None = None) -> None:
    """Experience: did applying this skill (and variant) help on this kind of kernel, on this GPU?
    On the CPU it is a try only: the interpreter's timings are never gains. `base`: the time the
    gain is against (by default the best's)."""
    base = base if base is not None else speed(state.best_verdict)
    cpu = v.timing_is_cpu or not v.gpu_name
    gain = base / v.runtime_ms if v.correct and base and v.runtime_ms and not cpu else None
    profile = state.profile
    structure = profile.structures[0] if profile and profile.structures else "multi-kernel-graph"
    try:
        get_index().record_outcome(cand.skill_id, structure, CPU if cpu else v.gpu_name, gain, v.correct,
                                   cand.params)
    except Exception as e:  # learning must never break a run; say so on stderr
        print(f"kernelskill: could not record skill experience: {e}", file=sys.stderr)
