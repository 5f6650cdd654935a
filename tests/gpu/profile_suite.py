"""Profiler on the H200: cost per round, and the classification of every level-1 problem.

    python3 tests/gpu/profile_suite.py [--ncu 22_softmax_last_dim,01_matmul_square,...] [--out FILE.json]

Part 1 (cost per round): the full `eval.profiling.profile()` path the graph uses (sandboxed child,
timeline, timing, Nsight Compute when on PATH) on a few references, plus one run without ncu.
Part 2 (classification): every problems/level1/*.py reference measured in-process (trusted code,
no ncu: ~1-2 s each), classified, printed as a table. Stops part 2 at --limit-s and prints what it has.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ncu", help="problems profiled through the child, with ncu",
                    default="22_softmax_last_dim,01_matmul_square,19_batchnorm2d,51_conv_transpose3d")
    ap.add_argument("--out", default=None)
    ap.add_argument("--limit-s", type=float, default=180.0, help="stop part 2 after this many seconds in all")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script's plumbing (small sizes)")
    args = ap.parse_args()
    t_start = time.time()

    import torch
    from kernelskill.nodes.profiler import op_summary, profile_from_result
    from kernelskill.profiling.profile import ProfileOptions, measure, profile, request

    cuda = args.device == "cuda"
    size = "full" if cuda else "small"
    gpu = torch.cuda.get_device_name() if cuda else "cpu dry run"
    print(f"{gpu} torch {torch.__version__} ncu={shutil.which('ncu')}", flush=True)
    dump: dict[str, object] = {"cost": [], "suite": []}

    # ---- part 1: cost per round through the sandboxed child ---------------------------------
    print("\n== cost per round (profile() in a child, as the graph's profiler node runs it)")
    print(f"{'problem':28s} {'ncu':5s} {'wall s':>7s} {'child s':>8s} {'ncu s':>6s}  bottleneck / ncu status")
    runs = [(s, True) for s in args.ncu.split(",") if s] + [("22_softmax_last_dim", False)]
    for stem, use_ncu in runs:
        path = ROOT / "problems" / "level1" / f"{stem}.py"
        t = time.time()
        r = profile(path.read_text(), None, ProfileOptions(device=args.device, size=size, ncu=use_ncu),
                    problem_name=str(path))
        wall = time.time() - t
        p = profile_from_result(r, op_summary(path.read_text(), str(path))) if r.ok else None
        verdict = p.bottleneck if p else "FAILED"
        print(f"{stem:28s} {str(use_ncu):5s} {wall:7.1f} {r.elapsed_s or 0:8.1f} {r.ncu_s or 0:6.1f}  "
              f"{verdict} / {r.ncu_status} {'' if r.ok else (r.reason or '')[:120]}", flush=True)
        if p is not None and use_ncu:
            print("    " + p.signature.replace("\n", "\n    "))
            for k in p.kernels[:3]:
                print(f"    {k.share:5.1%} {k.bottleneck}: {k.rationale[:150]} | stalls {k.stalls}")
        dump["cost"].append({"problem": stem, "ncu": use_ncu, "wall_s": round(wall, 2),
                             "child_s": r.elapsed_s, "ncu_s": r.ncu_s, "ncu_status": r.ncu_status, "ok": r.ok,
                             "reason": r.reason,
                             "log_tail": r.log_tail[-1500:] if not r.ok else ""})

    # ---- part 2: every level-1 reference, in-process, no ncu --------------------------------
    print("\n== level-1 references (in-process, no ncu; runtime = median CUDA-event time, L2 flushed)")
    print(f"{'problem':28s} {'ms':>8s} {'floor':>7s} {'x':>5s} {'n':>3s} {'idle':>5s} {'top kernel':26s} "
          f"{'bottleneck':17s} why")
    opts = ProfileOptions(device=args.device, size=size, ncu=False, timing_budget_s=0.3)
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((ROOT / "problems" / "level1").glob("*.py")):
            if time.time() - t_start > args.limit_s:
                print(f"-- stopped at --limit-s {args.limit_s:g}")
                break
            src = path.read_text()
            t = time.time()
            r = measure(request(src, None, opts, str(path)), scratch=Path(tmp))
            if not r.ok:
                print(f"{path.stem:28s} FAILED: {r.reason}", flush=True)
                continue
            p = profile_from_result(r, op_summary(src, str(path)))
            top = max(p.kernels, key=lambda k: k.share) if p.kernels else None
            idle = f"{1 - p.busy_ms / p.runtime_ms:5.0%}" if p.busy_ms and p.runtime_ms else "    -"
            top_s = f"{top.share:4.0%} {(top.structure or top.name)[:20]}" if top else "-"
            print(f"{path.stem:28s} {p.runtime_ms or 0:8.3f} {p.floor_ms or 0:7.3f} {p.headroom or 0:5.1f} "
                  f"{p.kernel_count:3d} "
                  f"{idle} {top_s:26s} {p.bottleneck:17s} {p.rationale[:110]}  [{time.time() - t:.1f}s]",
                  flush=True)
            dump["suite"].append({"problem": path.stem, **json.loads(p.model_dump_json())})
            gc.collect()
            if cuda:
                torch.cuda.empty_cache()
    print(f"\ntotal {time.time() - t_start:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
