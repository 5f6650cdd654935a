"""`kernelskill eval PROBLEM CANDIDATE`: the evaluator's verdict on one candidate.

Exit 0: correct; 1: rejected at some stage; 2: usage error or a broken problem file.
With --json, stdout is exactly one JSON object and everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..eval.types import EvalOptions, EvalResult
from .options import add_device_arguments, add_precision_arguments, precision_of, require_gpu, resolve_device

EXAMPLES = ("kernelskill eval problems/level1/11_gelu.py my_candidate.py --device cpu --trials 2",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("problem", nargs="?", help="problem file (class Model, get_inputs, get_init_inputs)")
    p.add_argument("candidate", nargs="?", help="candidate file defining class ModelNew")
    p.add_argument("--sandbox-report", action="store_true",
                   help="print which sandbox layers this machine allows, one line each, and exit")
    add_device_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--trials", type=int, default=5, help="correctness trials with fresh inputs (default 5)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before the worker is killed")
    p.add_argument("--no-baselines", action="store_true", help="skip timing eager and torch.compile")
    p.add_argument("--baselines-in", choices=("auto", "process", "judge"), default="auto",
                   help="where eager and torch.compile are timed: process (the reference in a process "
                        "of its own, timed exactly as the candidate is), judge (in the judge, on its own "
                        "inputs) or auto (process on a GPU, judge on the CPU; the default)")
    add_precision_arguments(p)


def run(args: argparse.Namespace) -> int:
    from ..eval.api import evaluate
    from ..eval.problem import CandidateError, ProblemError, read_source
    from .main import UsageError

    if args.sandbox_report:
        from ..eval.sandbox.report import report

        print("\n".join(report()))
        return 0
    if not (args.problem and args.candidate):
        raise UsageError("needs a PROBLEM and a CANDIDATE file (or --sandbox-report)")
    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    device, size = resolve_device(args.device, args.size)
    require_gpu(device)
    try:
        problem = read_source(args.problem, "problem")
        candidate = read_source(args.candidate, "candidate")
    except (ProblemError, CandidateError) as e:
        raise UsageError(str(e)) from None
    opts = EvalOptions(device=device, size=size, trials=args.trials, timeout_s=args.timeout,
                       baselines=not args.no_baselines, baselines_in=args.baselines_in,
                       precision=precision_of(args) or "default")
    print(f"evaluating {args.candidate} against {args.problem} on {device} ({size} sizes, "
          f"{opts.precision} precision)...",
          file=sys.stderr)
    result = evaluate(problem, candidate, opts, problem_name=str(Path(args.problem)),
                      candidate_name=str(Path(args.candidate)))
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(render(result))
    if result.usage_error:
        if not args.json:
            print(f"kernelskill eval: {result.reason}", file=sys.stderr)
        return 2
    return 0 if result.correct else 1


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f} ms"


_WHERE = {"process": "in the reference's own process, by the candidate's protocol",
          "process+judge": "eager in the reference's own process, torch.compile in the judge",
          "judge": "in the judge, on its own inputs"}


def render(r: EvalResult) -> str:
    """A few human-readable lines; CPU timings are labelled and never shown as speedups."""
    verdict = "CORRECT" if r.correct else f"REJECTED at {r.stage}"
    lines = [f"{verdict}" + (f": {r.reason}" if r.reason else "")]
    if r.failed_checks:
        lines.append(f"  failed checks: {', '.join(r.failed_checks)}")
    if r.correct:
        lines.append(f"  trials: {r.trials_run} + {r.perturbed_trials} perturbed, rule: {r.pass_rule}, "
                     f"max abs err {r.max_abs_err:.3g} (PyTorch's own {r.torch_fp32_err or 0:.3g})"
                     + (", WARNING: degenerate problem (output barely changes)" if r.degenerate else ""))
        lines.append(f"  custom kernels: {r.custom_kernels} {r.kernel_names}")
        label = "CPU timing (not a GPU speedup)" if r.timing_is_cpu else f"GPU timing on {r.gpu_name}"
        lines.append(f"  {label}: candidate {_ms(r.runtime_ms)}, eager {_ms(r.eager_ms)}, "
                     f"torch.compile {_ms(r.compile_ms)}, floor {_ms(r.floor_ms)}")
        if not r.timing_is_cpu and r.speedup_vs_eager:
            vs_c = f"{r.speedup_vs_compile:.2f}x" if r.speedup_vs_compile else "-"
            lines.append(f"  speedup: {r.speedup_vs_eager:.2f}x vs eager, {vs_c} vs torch.compile")
        if r.baselines_in:
            lines.append(f"  baselines timed {_WHERE.get(r.baselines_in, r.baselines_in)}")
    lines.append(f"  precision policy: {r.precision_policy} "
                 f"({', '.join(f'{k}={v}' for k, v in r.precision_flags.items())}, on both sides)")
    return "\n".join(lines)
