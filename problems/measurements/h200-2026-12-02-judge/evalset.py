"""On the H200: the built-in author's first candidate for each problem, generated at full size on
cuda, through the evaluator (judge + sandboxed candidate) with baselines; one row per problem
with the evaluation's wall time. Usage: evalset.py PRECISION OUT.jsonl PROBLEM...
KS_SPARES=1: evaluations take a spare judge started while the previous one ran, as a graph run
on a GPU does (eval/child.spare_judges)."""
import contextlib
import json
import sys
import time
from pathlib import Path

from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.eval.api import evaluate
from kernelskill.eval.child import spare_judges
from kernelskill.eval.types import EvalOptions
from kernelskill.state.records import Problem

import os
prec, out, paths = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
REPEAT = int(os.environ.get("KS_REPEAT", "1"))  # evaluations per problem (the 2nd finds warm caches)
DEV = os.environ.get("KS_DEVICE", "cuda")
SIZE = "full" if DEV == "cuda" else "small"
author = BuiltinAuthor()
rows = []
spares = spare_judges() if os.environ.get("KS_SPARES") else contextlib.nullcontext()
spares.__enter__()
for p in [Path(x) for x in paths for _ in range(REPEAT)]:
    key = f"{p.parent.name}/{p.stem}"
    t0 = time.time()
    try:
        problem = Problem(name=p.stem, path=str(p), source=p.read_text(), size=SIZE)
        cand = author.generate(AuthorTask(problem=problem, device=DEV, precision=prec))
        gen_s = time.time() - t0
        t1 = time.time()
        r = evaluate(problem.source, cand.source, EvalOptions(device=DEV, size=SIZE, precision=prec),
                     problem_name=p.name)
        ev_s = time.time() - t1
        row = dict(problem=key, precision=prec, correct=r.correct, stage=r.stage, reason=(r.reason or "")[:300],
                   checks=r.failed_checks, runtime_ms=r.runtime_ms, eager_ms=r.eager_ms, compile_ms=r.compile_ms,
                   floor_ms=r.floor_ms, idle_ms=getattr(r, "idle_ms", None), noise=getattr(r, "noise", None), gen_s=round(gen_s, 1),
                   eval_s=round(ev_s, 1), judge_s=r.elapsed_s, kernels=len(r.kernel_names or []),
                   templates=sorted(cand.author_state.templates), peak=getattr(r, "peak_memory_mb", None),
                   seconds=r.stage_seconds)
    except Exception as e:  # one problem's failure must not stop the set
        row = dict(problem=key, precision=prec, correct=False, stage="script", reason=f"{type(e).__name__}: {e}"[:300])
    rows.append(row)
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)

spares.__exit__(None, None, None)
print(f"\n{'problem':44} {'ok':>3} {'ours':>8} {'eager':>8} {'compile':>8} {'x eager':>7} {'x comp':>7} {'eval s':>6}")
for r in rows:
    ok = r.get("correct")
    ours, e, c = r.get("runtime_ms"), r.get("eager_ms"), r.get("compile_ms")
    xe = f"{e / ours:.2f}" if ok and ours and e else "-"
    xc = f"{c / ours:.2f}" if ok and ours and c else "-"
    f = lambda v: f"{v:.3f}" if isinstance(v, float) else "-"  # noqa: E731
    print(f"{r['problem']:44} {'y' if ok else 'n':>3} {f(ours):>8} {f(e):>8} {f(c):>8} {xe:>7} {xc:>7} "
          f"{r.get('eval_s', '-'):>6}  {'' if ok else (r.get('stage') or '') + ': ' + (r.get('reason') or '')[:90]}")
