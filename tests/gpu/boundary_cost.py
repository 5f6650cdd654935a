"""What the judge's OS boundary costs: the same candidates evaluated by two checkouts in turn.

    python3 tests/gpu/boundary_cost.py OLD_ROOT NEW_ROOT PROBLEM.py:CANDIDATE.py ...

OLD_ROOT and NEW_ROOT each hold a `kernelskill` link to a checkout. Each problem is first evaluated
once, untimed, with its first candidate (it fills torch.compile's shared cache for both), then each
candidate by the old and the new checkout, in alternating order from pair to pair. Each evaluation runs in
a fresh interpreter (one checkout per process). Prints one row per evaluation: correct,
candidate / eager / torch.compile ms, speedup over eager, the evaluation's seconds and where they
went (the load stage's parts too: the judge's clock around the reference, the candidate process's
start and its init), and the median seconds per checkout last. A kept reference (the user's module delivered
unchanged) should measure about 1.0x under both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ONE = """
import json, sys, time
from pathlib import Path
from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions
prob, cand = Path(sys.argv[1]), Path(sys.argv[2])
t0 = time.time()
r = evaluate(prob.read_text(), cand.read_text(), EvalOptions(device="cuda"), problem_name=str(prob),
             candidate_name=cand.name)
print("RESULT " + json.dumps({"correct": r.correct, "reason": (r.reason or "")[:200], "ms": r.runtime_ms,
      "eager": r.eager_ms, "compile": r.compile_ms, "x": r.speedup_vs_eager, "s": round(time.time() - t0, 1),
      "stages": {k: v for k, v in r.stage_seconds.items() if "." not in k},
      "load": {k[5:]: v for k, v in r.stage_seconds.items() if k.startswith("load.")},
      "where": r.baselines_in,
      "why": [ln[:400] for ln in r.log_tail.splitlines() if "baseline" in ln or "compile" in ln]}))
"""


def evaluate(root: str, prob: str, cand: str) -> dict:
    env = dict(os.environ, PYTHONPATH=root)
    p = subprocess.run([sys.executable, "-c", ONE, prob, cand], env=env, capture_output=True, text=True,
                       timeout=400)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return {"correct": False, "reason": (p.stderr or p.stdout)[-300:], "s": None}
    return json.loads(line[7:])


def main() -> None:
    old, new = sys.argv[1:3]
    secs: dict[str, list[float]] = {"old": [], "new": []}
    warm: set[str] = set()
    for i, pair in enumerate(sys.argv[3:]):
        prob, cand = pair.split(":")
        if prob not in warm:  # torch.compile's shared cache filled for both, untimed
            warm.add(prob)
            evaluate(old, prob, cand)
        order = [("old", old), ("new", new)] if i % 2 == 0 else [("new", new), ("old", old)]
        for label, root in order:
            t0 = time.time()
            r = evaluate(root, prob, cand)
            wall = time.time() - t0
            if r.get("s") is not None:
                secs[label].append(r["s"])
            x = f"{r['x']:.3f}" if r.get("x") else "-"
            print(f"{os.path.basename(cand):42s} {label}  correct={r['correct']}  x eager {x}  "
                  f"cand {r.get('ms')}  eager {r.get('eager')}  compile {r.get('compile')}  "
                  f"eval {r.get('s')} s (process {wall:.1f} s)  {r.get('where')}  {r.get('stages')}  "
                  f"load parts {r.get('load')}"
                  + ("" if r["correct"] else f"  REASON {r.get('reason')}"), flush=True)
            if r.get("where") != "process":  # why the baselines left their process
                why = r.get("why") or ["(no line in the judge's log tail)"]
                print("    " + "\n    ".join(why), flush=True)
    for label, s in secs.items():
        if s:
            print(f"median evaluation seconds, {label}: {statistics.median(s):.1f} over {len(s)}")


if __name__ == "__main__":
    main()
