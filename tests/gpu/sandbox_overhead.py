"""Is a candidate slower in the evaluator's sandbox than in a plain process, and why? On one GPU.

    python3 tests/gpu/sandbox_overhead.py PROBLEM...

H200, 2026-12-03 (problems/measurements/h200-2026-12-03-batchnorm-nhwc/call1_first_candidates.txt,
tests/gpu/first_candidates.py): first candidates made of several plain launches measured 10-25% slower in the
judge's candidate process and in the profiler's child (both sandboxed) than in one process by the
same protocol (level2/02 0.712 -> 0.788 ms, level3/03 0.948 -> 1.196), while eager agreed. For
each problem the built-in author's first candidate and the reference are timed by
`eval.timing.Timer` (L2 flushed, device idle before each call, CUDA events) in four setups, each
adding one thing:
  inproc    this process
  poison    the same with the candidate process's allocator poisoning before each run (2x the
            input bytes written and freed; the judge times eager without it)
  guard     in this process, the candidate's forwards inside eval.audit's guard (the audit hook
            on, as in the candidate process), eager outside it as the judge times it

  plain     a fresh `python -P` process, this environment
  env       the same with the sandbox's environment (eval.sandbox_env.child_env: an allowlist,
            home and temp in a scratch folder)
  sandbox   eval.sandbox.sandboxed_popen: that environment plus namespaces, rlimits, mounts
Prints one row per problem and setup: eager ms, candidate ms, candidate over eager; then the
audit events one guarded candidate forward raises (each one a call of the hook's Python code).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def measure(problem_path: str, cand_path: str, poison: bool = False, guard: bool = False) -> dict[str, float]:
    """Eager and the candidate at full size, the evaluator's protocol, default policy; `poison`:
    both with the candidate process's allocator poisoning (twice the input bytes) before each run;
    `guard`: the candidate's forwards inside the audit guard (with its event census)."""
    import torch
    from kernelskill.eval import harness as H
    from kernelskill.eval import precision as P
    from kernelskill.eval.candidate.poison import poison_cuda_allocator
    from kernelskill.eval.problem import load_candidate, load_problem
    from kernelskill.eval.timing.protocol import Timer

    class PoisonTimer(Timer):
        def flush_l2(self) -> None:
            poison_cuda_allocator(nbytes)
            super().flush_l2()

    prob = load_problem(Path(problem_path).read_text(), "full", problem_path)
    module = load_candidate(Path(cand_path).read_text(), cand_path)
    ref, new = H.build(prob.model_cls, prob, 0, "cuda"), H.build(module.ModelNew, prob, 0, "cuda")
    sets = [H.make_inputs(prob, 1 + s, "cuda") for s in range(3)]
    nbytes = 2 * sum(x.numel() * x.element_size() for x in sets[0] if isinstance(x, torch.Tensor))
    timer = PoisonTimer("cuda") if poison else Timer("cuda")
    events: Counter = Counter()
    if guard:
        from kernelskill.eval.candidate import audit
        new = audit.Guard(Path(cand_path).parent, cand_path).wrap(new)
    with torch.no_grad(), P.applied(P.policy("default")):
        eager = timer.time(ref, sets).median_ms
        cand = timer.time(new, sets).median_ms
        if guard:
            counting = [True]
            sys.addaudithook(lambda ev, args: counting[0] and events.update([ev]))
            new(*sets[0])
            torch.cuda.synchronize()
            counting[0] = False
    return {"eager": eager, "cand": cand, **({"events": dict(events.most_common(8))} if guard else {})}


def _worker_cmd(scratch: Path, problem: Path, cand: Path) -> list[str]:
    return [sys.executable, "-P", str(scratch / "worker.py"), "--worker", str(problem), str(cand)]


def _last_json(text: str) -> dict[str, float] | None:
    lines = [ln for ln in text.strip().splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def one(problem_path: str) -> None:
    from kernelskill.authors.base import AuthorTask
    from kernelskill.authors.builtin.author import BuiltinAuthor
    from kernelskill.eval.sandbox.env import child_env
    from kernelskill.eval.sandbox.layers import kill_all, sandboxed_popen
    from kernelskill.state.records import Problem

    src = Path(problem_path).read_text()
    prob = Problem(name=Path(problem_path).stem, path=problem_path, source=src, size="full")
    task = AuthorTask(problem=prob, device="cuda", precision="default")
    scratch = Path(tempfile.mkdtemp(prefix="ks-sandbox-overhead-"))
    problem, cand = scratch / "problem.py", scratch / "cand.py"
    problem.write_text(src)
    cand.write_text(BuiltinAuthor().generate(task).source)
    shutil.copy(__file__, scratch / "worker.py")
    cmd = _worker_cmd(scratch, problem, cand)
    rows = {"inproc": measure(str(problem), str(cand)),
            "poison": measure(str(problem), str(cand), poison=True),
            "guard": measure(str(problem), str(cand), guard=True)}
    for name, env in (("plain", None), ("env", child_env("cuda", scratch))):
        done = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
        rows[name] = _last_json(done.stdout) or {"error": done.stderr.strip()[-300:]}
    run = sandboxed_popen(cmd, scratch, "cuda", timeout_s=300, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = run.proc.communicate(timeout=300)
        rows["sandbox"] = _last_json(out.decode()) or {"error": err.decode().strip()[-300:]}
    finally:
        kill_all(run)
    name = f"{Path(problem_path).parent.name}/{Path(problem_path).stem}"
    for setup, r in rows.items():
        if "error" in r:
            print(f"{name:48s} {setup:8s} FAILED {r['error']}", flush=True)
        else:
            print(f"{name:48s} {setup:8s} eager {r['eager']:.3f} ms  candidate {r['cand']:.3f} ms  "
                  f"({r['cand'] / r['eager']:.3f} of eager)", flush=True)
            if "events" in r:
                print(f"{name:48s} {setup:8s} audit events in one forward: {r['events'] or 'none'}",
                      flush=True)
    shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(measure(sys.argv[2], sys.argv[3])), flush=True)
        return
    for p in sys.argv[1:]:
        try:
            one(p)
        except Exception as e:  # noqa: BLE001 - one broken problem must not hide the others
            print(f"{p}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main()
