"""Why a candidate measures slower in the judge than in one process (issue A's kept references, C's
CNN candidates): on an H100, 2026-12-06 (problems/measurements/h100-2026-12-06-level3/), the first
candidate of level3/02 measured 0.80 ms in one process (first_candidates.py) and 1.48 ms in the
judge during a bench, and the kept reference of level3/03 0.89x eager.

    python3 tests/gpu/judge_gap.py [--repeat N] [--candidates DIR] PROBLEM.py ...

Per problem, in a loop of evaluations with spare judges on (as optimize and bench run them):
- the reference verbatim (a kept reference), judged `--repeat` times: x eager should be 0.97-1.03;
- where DIR holds the built-in author's first candidate (LEVEL_STEM.py, as first_candidates.py
  --out writes them) and it replays a CUDA graph: that candidate as written, forced to replay and
  forced to plain calls (its _GRAPH_MARGIN edited), each timed in this process by the evaluator's
  Timer and then judged. Which of the three the judge's number matches says whether the replay
  gate chose differently there, or the judge times the same choice slower. (Until b9f6eb3 each was
  also timed under layer 1 of the poisoning, whose NaN fills of every CUDA temporary were the gap:
  problems/measurements/h100-2026-12-06-judge-gap/. Layer 1 fills no CUDA tensor since.)
Each judged row: runtime, eager, x eager, the candidate process's own median (reported), its host
time to an idle device (idle), the protocol's cost per run (null forward), and the timing stage's
parts in seconds (timing.quiet: the wait for imports beside it to end).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
from first_candidates import load_module  # a sibling script: its directory is on sys.path
from kernelskill.authors.builtin.emit import assemble_verbatim
from kernelskill.eval import harness as H
from kernelskill.eval.api import evaluate
from kernelskill.eval.child import spare_judges
from kernelskill.eval.precision import applied, policy
from kernelskill.eval.problem import load_problem
from kernelskill.eval.timing.protocol import Timer
from kernelskill.eval.types import EvalOptions

MARGIN = re.compile(r"^_GRAPH_MARGIN = .*$", re.M)
VARIANTS = {"as written": None, "forced replay": "-1e9", "forced plain": "1.0"}


def in_process(problem_path: Path, source: str) -> tuple[float, list[dict]]:
    """The candidate timed by the evaluator's protocol in this process (its first call, where the
    replay gate decides, is one of Timer's warm-ups), and its kernels in one call."""
    prob = load_problem(problem_path.read_text(), "full", str(problem_path))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    model = H.build(load_module(Path(f.name)).ModelNew, prob, 0, "cuda")
    sets = [H.make_inputs(prob, 1 + s, "cuda") for s in range(3)]

    with torch.no_grad(), applied(policy("default")):
        ms = Timer("cuda").time(model, sets).median_ms
    return ms, in_process_kernels(model, sets[0])  # the caller frees the cache once they are gone


def judged(problem_path: Path, source: str, label: str) -> None:
    t0 = time.time()
    r = evaluate(problem_path.read_text(), source, EvalOptions(device="cuda", profile=True),
                 problem_name=str(problem_path), candidate_name=f"{label.replace(' ', '_')}.py")
    parts = {k[7:]: v for k, v in r.stage_seconds.items() if k.startswith("timing.")}
    x = f"{r.speedup_vs_eager:.3f}" if r.speedup_vs_eager else "-"

    def ms(v: float | None) -> str:
        return f"{v:.4f}" if v is not None else "-"

    print(f"    judged  {label:14s} correct={r.correct} {ms(r.runtime_ms)} ms  eager {ms(r.eager_ms)}  "
          f"x eager {x}  reported {ms(r.reported_ms)}  idle {ms(r.idle_ms)}  null {ms(r.protocol_ms)}  "
          f"[{time.time() - t0:.0f} s]  timing parts {parts}"
          + ("" if r.correct else f"  REASON {r.reason[:200]}"), flush=True)
    print(f"            kernels of one call, candidate process: {top(r.kernel_breakdown or [])}", flush=True)


def top(rows: list[dict], n: int = 5) -> str:
    """Device time of one call and its `n` longest kernels, in microseconds."""
    total = sum(r["time_us"] for r in rows)
    return f"device {total:.0f} us: " + " | ".join(f"{r['name'][:40]} x{r['launches']} {r['time_us']:.0f}"
                                                   for r in rows[:n])


def in_process_kernels(model: torch.nn.Module, x: list) -> list[dict]:
    """The same breakdown as the judge's (eval/candidate/kernels.py), in this process."""
    from kernelskill.eval.candidate.kernels import kernel_breakdown
    return kernel_breakdown(model, x, policy("default"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--candidates", type=Path)
    args = ap.parse_args()
    with spare_judges():
        for path in args.problems:
            print(f"{path.parent.name}/{path.stem}", flush=True)
            kept = assemble_verbatim(path.read_text(), "the reference verbatim")
            for i in range(args.repeat):
                judged(path, kept, f"kept {i + 1}")
            first = args.candidates / f"{path.parent.name}_{path.stem}.py" if args.candidates else None
            if first is None or not first.exists() or not MARGIN.search(first.read_text()):
                continue
            for label, margin in VARIANTS.items():
                src = first.read_text() if margin is None else MARGIN.sub(f"_GRAPH_MARGIN = {margin}",
                                                                           first.read_text())
                try:
                    ms, rows = in_process(path, src)
                    torch.cuda.empty_cache()
                    print(f"    process {label:14s} {ms:.4f} ms  kernels {top(rows)}", flush=True)
                except Exception as e:  # noqa: BLE001 - the judged row still says what happened
                    print(f"    process {label:14s} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                judged(path, src, label)


if __name__ == "__main__":
    sys.exit(main())
