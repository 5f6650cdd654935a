"""How much of a candidate's first forward is Triton compiling, and what compiling its kernels on a
thread pool first would save (issue B: a later evaluation's seconds are mostly its compile).

    python3 tests/gpu/parallel_compile.py [--threads N] PROBLEM.py:CANDIDATE.py ...

Each (problem, mode) runs in a fresh subprocess with an empty Triton cache, the candidate trusted
and in-process (no judge):
- serial: the first forward as a candidate process runs it (each kernel compiled at its first
  launch, each autotuner benchmarking its configurations one compile after another);
- threads: first a compile-only pass on another instance of the model (every launch a warm-up
  under Triton's AsyncCompileMode on N threads; autotuners write nothing to disk and forget what
  that pass "measured"), then the first forward of the instance that is timed.
Prints each phase's seconds, the second forward's time and the output's largest difference from
the reference (the compile-only pass must not change what runs).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(problem_path: str, cand_path: str, mode: str, threads: int) -> dict:
    import torch
    from kernelskill.eval import harness as H
    from kernelskill.eval.precision import applied, policy
    from kernelskill.eval.problem import load_problem
    from triton.runtime import _async_compile
    from triton.runtime import autotuner as A
    from triton.runtime import jit as J

    problem = load_problem(Path(problem_path).read_text(), "full", problem_path)
    spec = importlib.util.spec_from_file_location("cand", cand_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out: dict = {"mode": mode}
    with torch.no_grad(), applied(policy("default")):
        ref = H.build(problem.model_cls, problem, 0, "cuda")
        x = H.make_inputs(problem, 0, "cuda")
        want = ref(*x)
        model = H.build(mod.ModelNew, problem, 0, "cuda")
        if mode == "threads":
            tuners = [v for v in vars(mod).values() if isinstance(v, A.Autotuner)]
            keep = [(t, t.cache_results) for t in tuners]
            orig = J.JITFunction.run

            def warm_only(self, *args, grid, warmup, **kw):  # noqa: ANN001, ANN202
                return orig(self, *args, grid=grid, warmup=True, **kw)

            from concurrent.futures import ThreadPoolExecutor

            t0 = time.time()
            J.JITFunction.run = warm_only
            for t in tuners:
                t.cache_results = False
            try:
                with ThreadPoolExecutor(threads) as pool, _async_compile.AsyncCompileMode(pool):
                    H.build(mod.ModelNew, problem, 0, "cuda")(*x)
            except Exception as e:  # noqa: BLE001
                out["prepass_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            finally:
                J.JITFunction.run = orig
                for t, c in keep:
                    t.cache_results = c
                    t.cache.clear()
            torch.cuda.synchronize()
            out["prepass_s"] = round(time.time() - t0, 2)
        t0 = time.time()
        got = model(*x)
        torch.cuda.synchronize()
        out["first_forward_s"] = round(time.time() - t0, 2)
        t0 = time.time()
        for _ in range(10):
            got = model(*x)
        torch.cuda.synchronize()
        out["forward_ms"] = round((time.time() - t0) * 100, 3)
        g = got if isinstance(got, torch.Tensor) else got[0]
        w = want if isinstance(want, torch.Tensor) else want[0]
        out["max_abs_diff"] = float((g.double() - w.double()).abs().max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+", help="PROBLEM.py:CANDIDATE.py")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--child", nargs=3, metavar=("PROBLEM", "CANDIDATE", "MODE"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.threads)), flush=True)
        return
    for pair in args.pairs:
        problem, cand = pair.split(":")
        for mode in ("serial", "threads", "serial", "threads"):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TRITON_CACHE_DIR=cache)
                t0 = time.time()
                p = subprocess.run([sys.executable, __file__, "x", "--threads", str(args.threads),
                                    "--child", problem, cand, mode], env=env, capture_output=True, text=True)
                wall = time.time() - t0
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-400:]
            print(f"{Path(problem).stem:34s} {mode:8s} process {wall:5.1f} s  {line}", flush=True)


if __name__ == "__main__":
    main()
