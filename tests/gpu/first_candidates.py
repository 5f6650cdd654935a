"""The built-in author's first candidate per problem, at full size on one GPU, without the graph:
correctness against float64 (the evaluator's compare, yardstick under the policy's flags), eager
and the candidate timed by the evaluator's protocol, then the candidate's largest kernels in one
profiled forward. Needs no embedding model, so it can use a fresh machine's first call.

    python3 tests/gpu/first_candidates.py [--precision default|strict|tf32] [--out DIR]
                                          [--variant JSON]... PROBLEM...

Each candidate's source is written under --out (default /tmp) for a later look.
"""
from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.eval import harness as H
from kernelskill.eval.judge.compare import compare
from kernelskill.eval.precision import applied, policy
from kernelskill.eval.problem import load_problem
from kernelskill.eval.timing.protocol import Timer
from kernelskill.state.records import Plan, Problem
from torch.profiler import ProfilerActivity, profile


def load_module(path: Path):  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def top_kernels(fn, x: list, n: int = 6) -> str:  # noqa: ANN001
    """The `n` kernels with the most device time in one forward (after a warm-up call), in us."""
    with torch.no_grad():
        fn(*x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*x)
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if us > 0:
            rows.append((us, e.key, e.count))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    cells = [f"{k[:48]} x{c} {us:.0f}" for us, k, c in rows[:n]]
    return f"device {total:.0f} us: " + " | ".join(cells)


def one(path: Path, pol_name: str, out: Path | None, author: BuiltinAuthor,
        apply: dict | None = None) -> None:
    t0 = time.time()
    pol = policy(pol_name)
    source = path.read_text()
    prob = load_problem(source, "full", str(path))
    task = AuthorTask(problem=Problem(name=path.stem, path=str(path), source=source, size="full"),
                      device="cuda", precision=pol.name)
    cand = author.generate(task)
    tag = ""
    if apply is not None:  # a skill's variant applied to the first candidate, as a round would
        task.best = cand
        cand = author.apply(task, Plan(skill_id=apply["skill"], params=apply.get("params") or {}))
        params = apply.get("params") or {}
        tag = "_" + "_".join(f"{k}-{v}" for k, v in sorted(params.items())) if params else "_default"
        print(f"{path.parent.name}/{path.stem} with {apply['skill']} {params}:", flush=True)
    cpath = (out or Path("/tmp")) / f"{path.parent.name}_{path.stem}{tag}.py"
    cpath.parent.mkdir(parents=True, exist_ok=True)
    cpath.write_text(cand.source)
    mod = load_module(cpath)
    ref, new = H.build(prob.model_cls, prob, 0, "cuda"), H.build(mod.ModelNew, prob, 0, "cuda")
    sets = [H.make_inputs(prob, 1 + s, "cuda") for s in range(3)]
    x = sets[0]
    timer = Timer("cuda")
    with torch.no_grad(), applied(pol):
        x64 = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in x]
        o64 = copy.deepcopy(ref).double()(*x64)
        o32 = copy.deepcopy(ref)(*x)
        v = compare(new(*x), o64, o32)
        del o64, o32, x64
        te = timer.time(ref, sets).median_ms
        tc = timer.time(new, sets).median_ms
        kernels = top_kernels(new, x)
    verdict = "ok" if v.ok else f"WRONG: {str(v.reason)[:80]}"
    print(f"{path.parent.name}/{path.stem}: eager {te:.3f} ms, candidate {tc:.3f} ms "
          f"({te / tc:.2f}x, {verdict}, err {v.max_abs_err:.1e} vs torch {v.torch_err:.1e}) "
          f"templates {','.join(sorted(cand.author_state.templates))} [{time.time() - t0:.0f}s]", flush=True)
    print(f"    {kernels}", flush=True)
    mod = new = ref = None
    gc.collect()
    torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", default="default")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--variant", action="append", default=[], type=json.loads, metavar="JSON",
                    help='also a skill applied to the first candidate, e.g. '
                         '\'{"skill": "depthwise-conv-direct", "params": {"tiles": "rows_per_thread"}}\' '
                         "(repeatable; each timed like the first)")
    ap.add_argument("problems", nargs="+", type=Path)
    args = ap.parse_args()
    author = BuiltinAuthor()
    for p in args.problems:
        for apply in [None, *args.variant]:
            try:
                one(p, args.precision, args.out, author, apply)
            except Exception as e:  # noqa: BLE001 - one broken problem must not hide the others
                print(f"{p}: FAILED {type(e).__name__}: {str(e)[:200]}", file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()
