"""Do kernels of a CUDA-graph-replaying candidate get Nsight Compute counters? On a GPU host with ncu:

    . tests/gpu/host_setup.sh && python3 tests/gpu/profile_graph_replay.py [PROBLEM...]

For each problem (default: three level-3 problems whose first candidate replays a CUDA graph) the
built-in author's first candidate is profiled the way the profiler node profiles it (`profile()`
with the node's options, then `profile_from_result`), and one line is printed: whether the timed
forward replayed a graph, ncu's status, kernels with counters / kernels, the hottest kernel's limiter,
DRAM % and SM % of peak. Then, as a diagnostic of the cause, the first problem once more with ncu
inside the replay (the old way; not part of the verdict). Exit 1 when a hottest kernel has no
counters or no forward replayed a graph (the check would prove nothing). Needs no network; about
20-40 s per profile.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.nodes.limiter import has_counters
from kernelskill.nodes.profiler import op_summary, profile_from_result
from kernelskill.profiling.ncu import base_name
from kernelskill.profiling.profile import ProfileOptions, profile
from kernelskill.state.graph_state import RunSettings
from kernelskill.state.records import Candidate, Problem

ROOT = Path(__file__).resolve().parents[2]
# Launch-bound forwards whose inputs and outputs stay under the wrapper's 192 MB replay limit: a
# 200-step LSTM loop, a GPT decoder block, a squeeze-excitation block (replayed on an H200 before).
DEFAULT = ["problems/level3/08_lstm_cell_loop.py", "problems/level3/13_gpt_decoder_block.py",
           "problems/level3/11_squeeze_excitation_block.py"]


def first_candidate(path: Path, s: RunSettings) -> Candidate:
    task = AuthorTask(problem=Problem(name=path.stem, path=str(path), source=path.read_text(), size=s.size),
                      device="cuda", precision=s.precision)
    return BuiltinAuthor().generate(task)


def check(path: Path, cand: Candidate, s: RunSettings, without_replay: bool = True) -> tuple[bool, bool]:
    """Profile one candidate and print its line; (the hottest kernel has counters, the forward replayed)."""
    src, t = path.read_text(), time.time()
    opts = ProfileOptions(size=s.size, precision=s.precision, budget_s=s.profile_budget_s,
                          ncu_without_replay=without_replay)
    r = profile(src, cand.source, opts, problem_name=str(path), candidate_name=f"candidate_{cand.hash}.py")
    name = f"{path.parent.name}/{path.stem}" + ("" if without_replay else " [ncu inside the replay]")
    if not r.ok:
        print(f"{name}: profile failed at {r.stage}: {r.reason}\n{r.log_tail[-1500:]}", flush=True)
        return False, False
    p = profile_from_result(r, op_summary(src, str(path)), cand.hash)
    kernels = [k for k in p.kernels if k.kind == "kernel"]
    hot = max(kernels, key=lambda k: k.share, default=None)
    ok = hot is not None and has_counters(hot)
    line = (f"{name}: replayed={'yes' if r.graph_replay else 'no'} ncu_status={r.ncu_status!r} "
            f"counters {sum(has_counters(k) for k in kernels)}/{len(kernels)} kernels")
    if hot is None:
        line += "; the timeline shows no kernels (CUPTI reported none inside the graph?)"
    else:
        line += (f"; hottest kernel {base_name(hot.name)[:48]} ({hot.share:.0%}): limiter {hot.limiter}, "
                 f"dram_pct {hot.dram_pct}, sm_pct {hot.sm_pct}")
    print(f"{line}; profile limiter {p.limiter} [{time.time() - t:.0f} s]", flush=True)
    print(f"    {p.limiter_rationale}", flush=True)
    for note in p.notes:
        print(f"    note: {note}", flush=True)
    return ok, r.graph_replay


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*", default=DEFAULT)
    ap.add_argument("--no-diagnostic", action="store_true", help="skip the run with ncu inside the replay")
    args = ap.parse_args(argv)
    s = RunSettings(device="cuda")  # the node's size, precision and profile budget
    failed, replayed, first = [], 0, None
    for arg in args.problems:
        path = Path(arg) if Path(arg).is_absolute() else ROOT / arg
        cand = first_candidate(path, s)
        if "_cuda_graphs" not in cand.source:
            print(f"{path.stem}: the first candidate does not wrap its forward in graph replay", flush=True)
        ok, rep = check(path, cand, s)
        replayed += rep
        first = first or (path, cand)
        if not ok:
            failed.append(path.stem)
    if first is not None and not args.no_diagnostic:
        check(*first, s, without_replay=False)
    if not replayed:
        print("FAIL: no profiled forward replayed a CUDA graph; pick problems whose candidates replay")
        return 1
    print("FAIL: hottest kernel without counters: " + ", ".join(failed) if failed else
          f"OK: every hottest kernel has counters ({replayed} of {len(args.problems)} forwards replayed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
