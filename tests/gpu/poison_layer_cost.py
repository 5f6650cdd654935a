"""Which candidate-process layer makes first candidates measure slower in the judge: layer 1 of the
poisoning around every run (eval/candidate/poison.py: today wrapped `empty*` factories; `mode`: the
torch function mode it was before), or the seccomp filter (eval/sandbox/seccomp.py)? One process,
the evaluator's Timer, the reference's eager forward as the control; seccomp is installed last (it
cannot be taken off).

    python3 tests/gpu/poison_layer_cost.py PROBLEM.py:CANDIDATE.py ...

Prints per problem: candidate and eager ms plain, under layer 1, under the old mode, then the same
under seccomp. Since b9f6eb3 layer 1 fills no CUDA tensor (the allocator is poisoned before each
run instead), so its row measures the wrappers alone.
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
from torch.overrides import TorchFunctionMode


class OldMode(TorchFunctionMode):
    """Layer 1 as it was until 2026-12-06: a mode that sees every torch call, fills empty* outputs."""

    FACTORIES = {torch.empty, torch.empty_like, torch.empty_strided}

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if func in self.FACTORIES and isinstance(out, torch.Tensor) and out.is_floating_point():
            with torch.no_grad():
                out.fill_(float("nan"))
        return out


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
            with poisoned(FillClock()):
                return model(*xs)
        return run

    def under_old(model: torch.nn.Module) -> object:
        def run(*xs: object) -> object:
            with OldMode():
                return model(*xs)
        return run

    rows: dict[str, dict[str, float]] = {name: {} for name, *_ in cases}
    for phase in ("plain", "seccomp"):
        if phase == "seccomp":
            seccomp.install()
        for name, ref, cand, sets in cases:
            for label, fn in (("cand", cand), ("cand+mode", under_mode(cand)), ("cand+old", under_old(cand)),
                              ("eager", ref), ("eager+mode", under_mode(ref)), ("eager+old", under_old(ref))):
                ms = rows[name][f"{phase}:{label}"] = timer.time(fn, sets).median_ms
                print(f"{name:34s} {phase:8s} {label:11s} {ms:.4f} ms", flush=True)
    cols = [f"{p}:{m}{s}" for m in ("cand", "eager") for p in ("plain", "seccomp")
            for s in ("", "+mode", "+old")]
    print("\nms per forward; +mode: layer 1 as now, +old: the torch function mode it was\nproblem" + " " * 28
          + " ".join(f"{c:>19s}" for c in cols))
    for name, r in rows.items():
        print(f"{name:34s} " + " ".join(f"{r[c]:19.4f}" for c in cols))


if __name__ == "__main__":
    main()
