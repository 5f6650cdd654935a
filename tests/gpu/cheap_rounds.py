"""What a later round's evaluation costs: the first candidate of each problem evaluated once with
the full protocol, then again as a later round would (eager and torch.compile handed over in
`known_baselines`, `timing_mode="rank"`), with spare judges on as optimize and bench run them.

    python3 tests/gpu/cheap_rounds.py [--repeat N] [--late-spares] PROBLEM.py:CANDIDATE.py ...

(candidates written beforehand, e.g. the built-in author's first: eval/ alone runs on a bare host)

Prints one row per evaluation (seconds, runtime, where the baselines came from), the rank-mode
runtime against the full one per problem, and the median seconds of the later evaluations: each
repeat judges the candidate twice as a later round, without and with the autotuning records the full
evaluation harvested (`EvalOptions.tuning`, eval/judge/tuning.py; `--no-tuning`: without only).
`--late-spares` starts each spare once the evaluation before it is over, as before spares started
early (eval/child.py EARLY_SPARE_DEVICES): the two runs' rank runtimes against the full one say
whether a spare starting beside a timed judge moves its numbers, their seconds what it saves.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kernelskill.eval import child
from kernelskill.eval.api import evaluate, evaluate_many
from kernelskill.eval.child import spare_judges
from kernelskill.eval.types import EvalOptions, EvalResult, handed_work


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+", help="PROBLEM.py:CANDIDATE.py")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-tuning", action="store_true")
    ap.add_argument("--late-spares", action="store_true")
    ap.add_argument("--side-by-side", type=int, default=0, metavar="N",
                    help="also judge N copies of the candidate as one round, one after another and "
                         "side by side (eval/batch.py): wall per candidate and rank runtimes of each")
    args = ap.parse_args()
    if args.late_spares:
        child.EARLY_SPARE_DEVICES = ()
    later: dict[str, list[float]] = {"untuned": [], "tuned": []}
    with spare_judges():
        for pair in args.pairs:
            path, cand_path = (Path(p) for p in pair.split(":"))
            src, cand = path.read_text(), cand_path.read_text()
            t0 = time.time()
            full = evaluate(src, cand, EvalOptions(device="cuda"), problem_name=str(path))
            print(f"{path.stem:34s} full  {time.time() - t0:5.1f} s  correct={full.correct}  "
                  f"{full.runtime_ms} ms  eager {full.eager_ms}  compile {full.compile_ms}  "
                  f"{full.baselines_in}  tuning records {len(full.tuning)}", flush=True)
            if not full.correct:
                continue
            if args.side_by_side > 1:
                side_by_side(src, cand, full, path, args.side_by_side)
            kinds = ["untuned"] if args.no_tuning else ["untuned", "tuned"]
            for i in range(args.repeat):
                for kind in kinds if i % 2 == 0 else kinds[::-1]:
                    opts = EvalOptions(device="cuda", known_baselines=[full.eager_ms, full.compile_ms],
                                       timing_mode="rank", work=handed_work(full),
                                       tuning=full.tuning if kind == "tuned" else None)
                    t0 = time.time()
                    r = evaluate(src, cand, opts, problem_name=str(path))
                    later[kind].append(time.time() - t0)
                    ok = r.runtime_ms and full.runtime_ms
                    ratio = r.runtime_ms / full.runtime_ms if ok else float("nan")
                    print(f"{path.stem:34s} rank {kind:7s} {later[kind][-1]:5.1f} s  correct={r.correct}  "
                          f"{r.runtime_ms} ms (x{ratio:.3f} of full)  {r.baselines_in}  noise {r.noise}  "
                          f"start {r.stage_seconds.get('processes.start')}  "
                          f"{r.stage_seconds}", flush=True)
    for kind, secs in later.items():
        if secs:
            print(f"median later evaluation, {kind}: {statistics.median(secs):.1f} s over {len(secs)}")


def side_by_side(src: str, cand: str, full: EvalResult, path: Path, n: int) -> None:
    """N copies of the candidate (a comment apart: distinct sources, the same kernels) judged as a
    later round judges its variants: one after another, then side by side, then one after another."""
    opts = EvalOptions(device="cuda", known_baselines=[full.eager_ms, full.compile_ms], timing_mode="rank",
                       work=handed_work(full), tuning=full.tuning)
    copies = [f"{cand}\n# copy {i}\n" for i in range(n)]
    for parallel in (1, n, 1):
        t0 = time.time()
        rs = evaluate_many(src, copies, opts, problem_name=str(path), parallel=parallel)
        wall = time.time() - t0
        ms = [r.runtime_ms and round(r.runtime_ms, 4) for r in rs]
        print(f"{path.stem:34s} round of {n}, parallel {parallel}: {wall:5.1f} s, "
              f"{wall / n:4.1f} s per candidate; correct {[r.correct for r in rs]}; ms {ms} "
              f"(full {full.runtime_ms:.4f}); contended {[r.contended for r in rs]}; gate s "
              f"{[r.stage_seconds.get('timing.gate') for r in rs]}; gpu_idle s "
              f"{[r.stage_seconds.get('timing.gpu_idle') for r in rs]}", flush=True)


if __name__ == "__main__":
    main()
