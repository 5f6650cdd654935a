"""Where the split judge's per-call cost on candidates comes from (issue 22), on one GPU.

    python3 tests/gpu/split_overhead.py PROBLEM...

For each problem, the built-in author's first candidate and the reference are timed under the
evaluator's protocol (allocator poisoned, L2 flushed, device idle, CUDA events around one call)
in setups that each change one thing against the judge's own eager timing:
  local      this process, inputs made here (what the judge does for eager)
  poison     + the allocator poisoned with 2x the input bytes before each run (candidate_proc)
  guard      + the audit guard and the precision flags around the call (candidate_proc)
  child-ipc  a second process timing the same model on inputs it received through CUDA IPC
  child-own  that process on its own copies of those inputs
  rotate3    this process, three input sets in turn (as the evaluator rotates them)
  fresh3     + fresh values written into the set before each run (as the judge does)
  child-fresh   the second process on three IPC sets that this process rewrites before each run
                (the evaluator's pattern: judge writes in its CUDA context, candidate reads in its own)
  child-touch   + the second process touches the inputs' pages first (eval.timing.touch_pages)
  evaluator  the real evaluator (judge + sandboxed candidate process): runtime_ms and eager_ms
Prints one table: median ms per setup, and each setup over `local`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

RUNS, WARMUP = 200, 5


def time_calls(fn, inputs, poison_bytes: int = 0, guard=None, sets=None, fresh: bool = False,  # noqa: ANN001
               before=None) -> float:  # noqa: ANN001
    from kernelskill.eval.candidate.poison import poison_cuda_allocator
    from kernelskill.eval.timing.protocol import FLUSH_BYTES

    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    times = []
    with torch.no_grad():
        for i in range(RUNS + WARMUP):
            if sets is not None:
                inputs = sets[i % len(sets)]
                if fresh:
                    for x in inputs:
                        if isinstance(x, torch.Tensor) and x.is_floating_point():
                            x.copy_(torch.randn_like(x))
                    torch.cuda.synchronize()
            if before is not None:
                before(i)
            if poison_bytes:
                poison_cuda_allocator(poison_bytes)
            flush.zero_()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if guard is not None:
                with guard:
                    s.record()
                    fn(*inputs)
                    e.record()
            else:
                s.record()
                fn(*inputs)
                e.record()
            torch.cuda.synchronize()
            if i >= WARMUP:
                times.append(s.elapsed_time(e))
    return statistics.median(times)


def build(problem_path: str, which: str):  # noqa: ANN201
    """(model, inputs) at full size on cuda; `which` is 'reference' or 'candidate'."""
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.eval.problem import load_candidate, load_problem
    from kernelskill.state.records import Problem

    src = Path(problem_path).read_text()
    prob = load_problem(src, "full", Path(problem_path).name)
    torch.manual_seed(0)
    init = prob.get_init_inputs()
    if which == "reference":
        model = prob.model_cls(*init)
    else:
        p = Problem(name=Path(problem_path).stem, path=problem_path, source=src, size="full")
        cand = BuiltinAuthor().generate(AuthorTask(problem=p, device="cuda", precision="default"))
        model = load_candidate(cand.source, "candidate.py").ModelNew(*init)
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    return model.cuda(), inputs, (None if which == "reference" else cand.source)


def _child(problem_path: str, which: str, inputs, sets, q, conn) -> None:  # noqa: ANN001
    from kernelskill.eval.timing.protocol import touch_pages

    model, _, _ = build(problem_path, which)
    ipc = time_calls(model, inputs)
    own = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.cuda.synchronize()
    q.put((ipc, time_calls(model, own)))
    for do_touch in (False, True):  # the parent rewrites set i % 3 before each run, then says go

        def wait_go(i: int, do_touch: bool = do_touch) -> None:
            conn.send(i)
            conn.recv()
            if do_touch:
                touch_pages(sets[i % len(sets)])

        q.put(time_calls(model, None, sets=sets, before=wait_go))


def row(problem_path: str, which: str) -> dict[str, float]:
    from kernelskill.eval import precision as P
    from kernelskill.eval.candidate.audit import Guard

    model, inputs, _ = build(problem_path, which)
    nbytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    out = {"local": time_calls(model, inputs)}
    out["poison"] = time_calls(model, inputs, 2 * nbytes)
    scratch = Path("/tmp/split-overhead")
    scratch.mkdir(exist_ok=True)
    g = Guard(scratch, "candidate.py")

    class _Both:
        def __enter__(self) -> None:
            self.p = P.applied(P.policy("default"))
            self.p.__enter__()
            g.__enter__()

        def __exit__(self, *a: object) -> None:
            g.__exit__(*a)
            self.p.__exit__(*a)

    out["guard"] = time_calls(model, inputs, 2 * nbytes, _Both())
    sets = [inputs] + [[torch.randn_like(x) if isinstance(x, torch.Tensor) and x.is_floating_point()
                        else x for x in inputs] for _ in range(2)]
    out["rotate3"] = time_calls(model, None, sets=sets)
    out["fresh3"] = time_calls(model, None, sets=sets, fresh=True)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(problem_path, which, inputs, sets, q, child_end))
    proc.start()
    out["child-ipc"], out["child-own"] = q.get(timeout=300)
    for name in ("child-fresh", "child-touch"):
        for _ in range(RUNS + WARMUP):  # serve the child's runs: fresh values, then go
            i = parent_end.recv()
            for x in sets[i % len(sets)]:
                if isinstance(x, torch.Tensor) and x.is_floating_point():
                    x.copy_(torch.randn_like(x))
            torch.cuda.synchronize()
            parent_end.send(True)
        out[name] = q.get(timeout=300)
    proc.join()
    out["local-again"] = time_calls(model, inputs)
    return out


def evaluator_row(problem_path: str) -> dict[str, float]:
    from kernelskill.eval.api import evaluate
    from kernelskill.eval.types import EvalOptions

    _, _, cand = build(problem_path, "candidate")
    t0 = time.time()
    r = evaluate(Path(problem_path).read_text(), cand, EvalOptions(device="cuda", size="full"),
                 problem_name=Path(problem_path).name)
    why = (r.reason or "")[:100]
    print(f"  evaluator: correct={r.correct} {why} in {time.time() - t0:.1f} s; "
          f"stage seconds {r.stage_seconds}", flush=True)
    return {"eval-cand": r.runtime_ms or 0.0, "eval-eager": r.eager_ms or 0.0}


def main() -> None:
    rows = []
    for path in sys.argv[1:]:
        for which in ("reference", "candidate"):
            try:
                r = row(path, which)
            except Exception as e:  # one failure must not stop the table
                print(f"{path} {which}: {type(e).__name__}: {e}", flush=True)
                continue
            print(Path(path).stem, which, {k: round(v, 4) for k, v in r.items()}, flush=True)
            rows.append((Path(path).stem, which, r))
        try:
            ev = evaluator_row(path)
            rows.append((Path(path).stem, "evaluator", ev))
        except Exception as e:
            print(f"{path} evaluator: {type(e).__name__}: {e}", flush=True)
    print("\nproblem                          model      setup        ms   x local")
    for name, which, r in rows:
        base = r.get("local") or r.get("eval-eager") or 1.0
        for k, v in r.items():
            print(f"{name[:32]:32} {which:10} {k:11} {v:7.4f} {v / base:6.3f}")


if __name__ == "__main__":
    main()
