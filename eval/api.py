"""The evaluator's one call: evaluate(problem, candidate, options) -> EvalResult.

Cheap checks run here (the problem's shape, the candidate's syntax and static checks); the
candidate itself only ever runs in a child process inside the OS sandbox (eval/child.py and
eval/sandbox/layers.py: an allowlisted environment, no network, a read-only file system but its scratch
folder, rlimits, every descendant killed at the end), and the problem's folder not importable. A
crash, an illegal memory access or a hang is an outcome, never a dead run. The judge signs its
result with a per-run key it receives on stdin, so a candidate that writes a result file of its
own is not believed.
"""

from __future__ import annotations

import time

from . import batch
from . import precision as P
from .candidate import kernel_pin
from .child import JUDGE, ChildRun, run_child
from .problem import ProblemError, check_problem_source
from .static.checks import check_parsed, problem_is_fp32
from .static.source import _Source
from .types import TIMING_MODES, EvalOptions, EvalResult


def evaluate(problem_source: str, candidate_source: str, options: EvalOptions | None = None, *,
             problem_name: str = "problem.py", candidate_name: str = "candidate.py") -> EvalResult:
    opts = options or EvalOptions()
    prepared = _prepare(problem_source, candidate_source, opts, problem_name, candidate_name)
    if isinstance(prepared, EvalResult):
        return prepared
    result, request = prepared
    t0 = time.perf_counter()
    run = run_child(JUDGE, request, opts.device, opts.timeout_s)
    return _outcome(run, result, opts, t0)


def evaluate_many(problem_source: str, candidate_sources: list[str], options: EvalOptions | None = None,
                  *, problem_name: str = "problem.py", candidate_names: list[str] | None = None,
                  parallel: int = 1) -> list[EvalResult]:
    """Several candidates of one problem (a round's variants), one result each, in order.
    `parallel` > 1: judged side by side where the options and the host allow it (eval/batch.py),
    else one after another."""
    opts = options or EvalOptions()
    names = candidate_names or [f"candidate_{i}.py" for i in range(len(candidate_sources))]
    pairs = list(zip(candidate_sources, names, strict=True))
    parallel = batch.width(opts, parallel) if len(pairs) > 1 else 1
    if parallel < 2:
        return [evaluate(problem_source, src, opts, problem_name=problem_name, candidate_name=name)
                for src, name in pairs]
    prepared = [_prepare(problem_source, src, opts, problem_name, name) for src, name in pairs]
    todo = [i for i, p in enumerate(prepared) if not isinstance(p, EvalResult)]
    runs = batch.judge_side_by_side([prepared[i][1] for i in todo], opts.device, opts.timeout_s, parallel)
    out = [p if isinstance(p, EvalResult) else None for p in prepared]
    for i, run in zip(todo, runs, strict=True):
        res = None if run is None else _outcome(run, prepared[i][0], opts, None)
        if res is None or res.contended:  # not believed side by side: judged by itself
            src, name = pairs[i]
            res = evaluate(problem_source, src, opts, problem_name=problem_name, candidate_name=name)
        out[i] = res
    return out


def _prepare(problem_source: str, candidate_source: str, opts: EvalOptions, problem_name: str,
             candidate_name: str) -> EvalResult | tuple[EvalResult, dict]:
    """The checks that need no process (policy, options, the problem's shape, the candidate's syntax
    and static checks): a failed result, or the result to fill and the judge's request."""
    result = EvalResult(device=opts.device, timing_is_cpu=opts.device != "cuda")
    try:
        policy = P.policy(opts.precision)
    except ValueError as e:
        result.usage_error = True
        return result.fail("load", str(e))
    result.precision_policy, result.precision_flags = policy.name, policy.flags()
    if opts.timing_mode not in TIMING_MODES:
        result.usage_error = True
        return result.fail("load", f"timing_mode {opts.timing_mode!r}: use one of {', '.join(TIMING_MODES)}")
    try:
        check_problem_source(problem_source, problem_name)
    except ProblemError as e:
        result.usage_error = True
        return result.fail("load", str(e))
    t0 = time.perf_counter()
    try:  # one parse for the static checks and the kernel pins (a large candidate's costs 0.1-0.2 s)
        parsed = _Source(candidate_source, problem_is_fp32(problem_source), policy.name)
    except SyntaxError as e:
        return result.fail("compile", f"{candidate_name}:{e.lineno}: syntax error: {e.msg}", "syntax")
    failures = check_parsed(parsed)
    result.stage_seconds["static"] = round(time.perf_counter() - t0, 3)
    if failures:
        names = list(dict.fromkeys(f.check for f in failures))
        return result.fail("static", f"{failures[0].message} ({len(failures)} of the static checks failed)",
                           *names)
    return result, _request(problem_source, candidate_source, opts, problem_name, candidate_name,
                            kernel_pin.pins(parsed))


def _request(problem_source: str, candidate_source: str, opts: EvalOptions, problem_name: str,
             candidate_name: str, pins: list[str] | None = None) -> dict:
    return {"problem_source": problem_source, "candidate_source": candidate_source,
            "problem_name": problem_name, "candidate_name": candidate_name, "options": opts.to_dict(),
            # The Triton kernels as the static checks read them: the candidate process compiles no other.
            "kernel_pins": kernel_pin.pins(candidate_source) if pins is None else pins,
            "deadline_unix": time.time() + opts.timeout_s}


def _run_worker(problem_source: str, candidate_source: str, opts: EvalOptions, problem_name: str,
                candidate_name: str, result: EvalResult, pins: list[str] | None = None) -> EvalResult:
    """The judge alone, past the static checks (the tests' way in for attacks the static layer
    would refuse first)."""
    request = _request(problem_source, candidate_source, opts, problem_name, candidate_name, pins)
    t0 = time.perf_counter()
    return _outcome(run_child(JUDGE, request, opts.device, opts.timeout_s), result, opts, t0)


def _outcome(run: ChildRun, result: EvalResult, opts: EvalOptions, t0: float | None) -> EvalResult:
    """The judge's signed result, or the failure its run was (a timeout, a crash); `result` holds
    what the parent measured before (the static checks' seconds); `t0`: when the parent started
    the child (None side by side, where the parent's wall is the batch's)."""
    if run.timed_out:
        result.log_tail = run.log_tail
        return result.fail(run.stage, f"timed out after {opts.timeout_s:g} s during {run.stage}", "timeout")
    if run.payload is None:
        result.log_tail = run.log_tail
        return result.fail(run.stage, f"worker crashed during {run.stage} {run.crash_reason()}", "crash")
    out = EvalResult.from_dict(run.payload)
    out.log_tail = run.log_tail
    if out.elapsed_s is None:
        out.elapsed_s = run.elapsed_s
    if "static" in result.stage_seconds:
        out.stage_seconds["static"] = result.stage_seconds["static"]
    out.stage_seconds["processes"] = round(max(run.elapsed_s - out.elapsed_s, 0.0), 3)
    if t0 is not None:  # the parent's bookkeeping around the child: scratch folder, GPU ceilings
        out.stage_seconds["parent"] = round(max(time.perf_counter() - t0 - run.elapsed_s, 0.0), 3)
    return out
