"""Do kept references measure about 1.0x once eager is timed as the candidate is? On one GPU.

    python3 tests/gpu/baseline_symmetry.py PROBLEM...

H200, 2026-12-02/03 (the `default` bench folders in problems/measurements/): the user's module delivered
unchanged (a kept reference) measured 0.92-0.99x eager, because the candidate is timed in a sandboxed
process on inputs the judge writes before each run, while eager was timed in the judge on its own
inputs. eval/judge/baselines.py times eager and torch.compile in a process of their own by the
candidate's loop. For each problem this runs the real evaluator (default policy) on:
  kept/process   the reference verbatim as the candidate, baselines in their process
  kept/judge     the same, baselines in the judge (the old way)
  first/process  the built-in author's first candidate, baselines in their process
and prints candidate, eager and torch.compile ms, the speedups and where the baselines ran.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.authors.builtin.emit import assemble_verbatim
    from kernelskill.eval.api import evaluate
    from kernelskill.eval.types import EvalOptions
    from kernelskill.state.records import Problem

    print(f"{'problem':44s} {'setup':14s} {'cand ms':>8s} {'eager':>8s} {'compile':>8s} "
          f"{'x eager':>7s} {'x comp':>7s}  where  (s)", flush=True)
    for path in sys.argv[1:]:
        src = Path(path).read_text()
        name = f"{Path(path).parent.name}/{Path(path).stem}"
        prob = Problem(name=Path(path).stem, path=path, source=src, size="full")
        first = BuiltinAuthor().generate(AuthorTask(problem=prob, device="cuda", precision="default")).source
        kept = assemble_verbatim(src, "the reference verbatim")
        for setup, cand, where in (("kept/process", kept, "process"), ("kept/judge", kept, "judge"),
                                   ("first/process", first, "process")):
            t0 = time.time()
            r = evaluate(src, cand, EvalOptions(device="cuda", baselines_in=where),
                         problem_name=Path(path).name)
            if not r.correct:
                print(f"{name:44s} {setup:14s} REJECTED at {r.stage}: {(r.reason or '')[:150]}", flush=True)
                continue
            print(f"{name:44s} {setup:14s} {r.runtime_ms:8.4f} {r.eager_ms:8.4f} {r.compile_ms or 0:8.4f} "
                  f"{r.speedup_vs_eager or 0:7.3f} {r.speedup_vs_compile or 0:7.3f}  {r.baselines_in}  "
                  f"({time.time() - t0:.0f})", flush=True)
            if r.baselines_in != where:
                print("   " + r.log_tail[-600:].replace("\n", "\n   "), flush=True)


if __name__ == "__main__":
    main()
