"""Which candidate-process layer makes first candidates measure slower in the judge: the poisoning
mode around every run (eval/candidate/poison.py, layer 1), or the seccomp filter
(eval/sandbox/seccomp.py)? One process, the evaluator's Timer, the reference's eager forward as
the control; seccomp is installed last (it cannot be taken off).

    python3 tests/gpu/poison_layer_cost.py PROBLEM.py:CANDIDATE.py ...

Prints per problem: candidate and eager ms plain, under the mode, and both again under seccomp.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch
from kernelskill.eval import harness as H
from kernelskill.eval.candidate.poison import FillClock, poisoned
from kernelskill.eval.problem import load_problem
from kernelskill.eval.sandbox import seccomp
from kernelskill.eval.timing.protocol import Timer


def _module(path: Path) -> type:
    spec = importlib.util.spec_from_file_location(f"cand_{path.stem.replace('.', '_')}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.ModelNew


def main() -> None:
    cases = []
    for pair in sys.argv[1:]:
        prob_path, cand_path = (Path(p) for p in pair.split(":"))
        problem = load_problem(prob_path.read_text(), "full", str(prob_path))
        ref = H.build(problem.model_cls, problem, 1, "cuda")
        cand = H.build(_module(cand_path), problem, 1, "cuda")
        sets = [H.make_inputs(problem, s, "cuda") for s in (2, 3)]
        cases.append((prob_path.stem, ref, cand, sets))
    timer = Timer("cuda", budget_s=1.5)

    def under_mode(model: torch.nn.Module) -> object:
        def run(*xs: object) -> object:
            with poisoned(FillClock(True)):
                return model(*xs)
        return run

    rows: dict[str, dict[str, float]] = {name: {} for name, *_ in cases}
    for phase in ("plain", "seccomp"):
        if phase == "seccomp":
            seccomp.install()
        for name, ref, cand, sets in cases:
            for label, fn in (("cand", cand), ("cand+mode", under_mode(cand)), ("eager", ref),
                              ("eager+mode", under_mode(ref))):
                ms = rows[name][f"{phase}:{label}"] = timer.time(fn, sets).median_ms
                print(f"{name:34s} {phase:8s} {label:11s} {ms:.4f} ms", flush=True)
    print("\nproblem                            cand   +mode  +seccomp  both   "
          " eager  +mode  +seccomp  both (ms)")
    for name, r in rows.items():
        print(f"{name:34s} " + "  ".join(f"{r[k]:.3f}" for k in (
            "plain:cand", "plain:cand+mode", "seccomp:cand", "seccomp:cand+mode",
            "plain:eager", "plain:eager+mode", "seccomp:eager", "seccomp:eager+mode")))


if __name__ == "__main__":
    main()
