"""Where a judge's seconds go, function by function: one evaluation of the built-in author's first
candidate, with the judge run in this process under cProfile (the candidate still runs in its own
sandboxed process, as in every evaluation). A diagnostic for issue 22's cost target, not a test.

    python3 tests/gpu/judge_profile.py PROBLEM.py [OUT.prof]

With CUDA_LAUNCH_BLOCKING=1 each GPU kernel's time lands on the call that launched it instead
of on the next synchronisation. Prints the stage seconds and the top functions by own time.
"""
import cProfile
import io
import json
import os
import pstats
import secrets
import sys
import tempfile
import time
from pathlib import Path

from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.eval.judge import main as judge_main
from kernelskill.eval.types import EvalOptions
from kernelskill.state.records import Problem

DEVICE = os.environ.get("KS_DEVICE", "cuda")  # cpu: a small-size dry run of this script
SIZE = "full" if DEVICE == "cuda" else "small"


def main() -> None:
    path = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    problem = Problem(name=path.stem, path=str(path), source=path.read_text(), size=SIZE)
    cand = BuiltinAuthor().generate(AuthorTask(problem=problem, device=DEVICE, precision="default"))
    opts = EvalOptions(device=DEVICE, size=SIZE, precision="default")
    with tempfile.TemporaryDirectory(prefix="ks-judge-profile-") as d:
        os.chmod(d, 0o777)  # the candidate may run as another uid (eval/sandbox/layers.py), as child.py
        # allows
        # As the sandbox does for a judge (eval/sandbox/env.py): a home in the scratch folder. Under
        # the real home the audit policy treats the carried wheel folder (~/.ks-site) as private
        # and refuses the candidate's reads of it (seen on the H200,
        # 2026-12-02, call 1 of problems/measurements/h200-2026-12-02-bench-level2/).
        os.environ["HOME"] = d
        req, res, progress = Path(d, "req.json"), Path(d, "res.json"), Path(d, "progress")
        req.write_text(json.dumps({
            "problem_source": problem.source, "candidate_source": cand.source,
            "problem_name": path.name, "candidate_name": "candidate.py", "options": opts.to_dict(),
            "deadline_unix": time.time() + opts.timeout_s}))
        sys.stdin = io.StringIO(secrets.token_hex(32) + "\n")
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.runcall(judge_main.main, [str(req), str(res), str(progress)])
        wall = time.perf_counter() - t0
        result = json.loads(json.loads(res.read_text())["result"])
    print(f"{path.stem}: correct={result.get('correct')} judge wall {wall:.1f} s {result.get('reason')}")
    print(json.dumps(result.get("stage_seconds"), indent=None))
    if out is not None:
        prof.dump_stats(out)
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_callers("compare|_Scan|__bool__|__float__|item", 12)


if __name__ == "__main__":
    main()
