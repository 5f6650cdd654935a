"""`kernelskill profile PROBLEM [CANDIDATE]`: where a forward's time goes and what limits it.

On cuda: one sandboxed child profiles the candidate (or the reference): kernel timeline, timing,
speed of light, Nsight Compute on the dominating kernels when `ncu` is on PATH. On cpu: the
static profile of the reference from its captured graph (nothing runs on a GPU; `kernels` is
empty). Exit 0: profiled; 1: the profile failed (the candidate crashed or timed out); 2: usage
error. With --json, stdout is exactly one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .options import add_device_arguments, add_precision_arguments, precision_of, require_gpu, resolve_device

if TYPE_CHECKING:
    from ..state.records import Profile


EXAMPLES = (
    "kernelskill profile problems/level2/01_linear_gelu_scale.py runs/01_linear_gelu_scale/solution.py",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("problem", help="problem file (class Model, get_inputs, get_init_inputs)")
    p.add_argument("candidate", nargs="?", help="candidate file defining ModelNew (default: the reference)")
    add_device_arguments(p, size_default="full; on cpu the profile is static, shapes on the meta device, "
                         "so full sizes cost nothing")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute even when it is on PATH")
    p.add_argument("--budget", type=float, default=25.0, help="seconds for the whole profile (default 25)")
    add_precision_arguments(p)


def run(args: argparse.Namespace) -> int:
    from ..eval.problem import CandidateError, ProblemError, check_problem_source, read_source
    from ..nodes.profiler import op_summary, profile_from_result, static_profile, static_work
    from ..profiling.profile import ProfileOptions, profile
    from ..state.records import source_hash
    from .main import UsageError

    try:
        problem = read_source(args.problem, "problem")
        candidate = read_source(args.candidate, "candidate") if args.candidate else None
        check_problem_source(problem, args.problem)
    except (ProblemError, CandidateError) as e:
        raise UsageError(str(e)) from None
    precision = precision_of(args) or "default"  # checked before anything runs
    device, size = resolve_device(args.device, args.size)
    require_gpu(device)
    if device == "cpu":
        size = args.size or "full"  # shapes only (meta device): full sizes cost nothing
    started = time.time()
    print(f"profiling {args.candidate or 'the reference'} of {args.problem} on {device} ({size} sizes)...",
          file=sys.stderr)
    ops = op_summary(problem, str(Path(args.problem)))
    extra: dict[str, object] = {"device": device, "size": size, "problem": args.problem,
                                "candidate": args.candidate}
    if device == "cpu":
        prof = static_profile(ops, static_work(problem, args.problem, size))
        if candidate is not None:
            prof.notes.append("cpu: the candidate is not run; this is the problem's static profile")
    else:
        opts = ProfileOptions(device=device, size=size, precision=precision,
                              budget_s=args.budget, ncu=not args.no_ncu)
        r = profile(problem, candidate, opts, problem_name=str(Path(args.problem)),
                    candidate_name=str(Path(args.candidate or "candidate.py")))
        if r.usage_error:
            raise UsageError(r.reason or "unusable problem")
        if not r.ok:
            if args.json:
                print(json.dumps({**extra, "ok": False, "stage": r.stage, "reason": r.reason}))
            print(f"kernelskill profile: failed during {r.stage}: {r.reason}", file=sys.stderr)
            return 1
        prof = profile_from_result(r, ops, source_hash(candidate) if candidate else None)
        extra["ncu_s"] = r.ncu_s
    extra["elapsed_s"] = round(time.time() - started, 2)
    if args.json:
        print(json.dumps({**prof.model_dump(), **extra, "ok": True}))
    else:
        print(render(prof))
    return 0


def render(p: Profile) -> str:
    """The signature, the rationale and the top kernels, for a terminal."""
    lines = [p.signature, f"why: {p.rationale}"]
    if p.floor_ms is not None:
        run = f", runtime {p.runtime_ms:.4f} ms" if p.runtime_ms else ""
        lines.append(f"FLOPs {p.flops:.3g}, minimum bytes {p.bytes:.3g}, floor {p.floor_ms:.4f} ms{run}"
                     f" (ceilings {p.bandwidth_gbs:g} GB/s, {p.peak_tflops:g} TFLOP/s)")
    for k in sorted(p.kernels, key=lambda k: -k.share)[:8]:
        metrics = "" if k.dram_pct is None else \
            f" DRAM {k.dram_pct:.0f}% SM {k.sm_pct or 0:.0f}% occ {k.occupancy_pct or 0:.0f}%"
        lines.append(f"  {k.share:6.1%} {k.time_us:10.1f} us x{k.launches:<3d} {k.bottleneck or '-':17s}"
                     f"{metrics}  {k.name[:70]}")
    lines += [f"note: {n}" for n in p.notes]
    if p.ncu_status:
        lines.append(f"ncu: {p.ncu_status}")
    return "\n".join(lines)
