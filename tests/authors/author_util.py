"""Helpers for author tests: generate a candidate for a problem source and judge it in-process
with the real evaluator pipeline (correctness vs float64, poisoned outputs, perturbed inputs)."""

from __future__ import annotations

import re
import tempfile
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.eval.judge.worker import Worker
from kernelskill.eval.types import EvalResult
from kernelskill.state.records import Candidate, Plan, Problem
from triton.runtime.autotuner import Autotuner

_AUTHOR: BuiltinAuthor | None = None


def author() -> BuiltinAuthor:
    global _AUTHOR
    if _AUTHOR is None:
        _AUTHOR = BuiltinAuthor()
    return _AUTHOR


def problem(source: str, name: str = "p", size: str = "small") -> Problem:
    return Problem(name=name, path=f"<{name}>", source=source, size=size)


def task_with_best(source: str) -> AuthorTask:
    """A CPU task whose best is the built-in author's first candidate: what a round's variants
    are applied to."""
    task = AuthorTask(problem=problem(source), device="cpu")
    task.best = author().generate(task)
    return task


def against_eager(problem_source: str, candidate_source: str, name: str,
                  before: Callable[[types.ModuleType], None] | None = None,
                  ) -> tuple[types.ModuleType, Any, Any]:
    """The candidate's module (`before` applied to it first) and its ModelNew and the problem's
    Model built under one seed (small size), both run on one input and checked close to each
    other: (module, ModelNew, Model)."""
    import torch
    from kernelskill.eval.harness import seeded
    from kernelskill.eval.problem import exec_module, load_problem

    mod = exec_module(candidate_source, f"{name}.py", name)
    if before is not None:
        before(mod)
    prob = load_problem(problem_source, "small")
    seeded(0)
    ref = prob.model_cls()
    seeded(0)
    new = mod.ModelNew()
    x = prob.get_inputs()[0]
    with torch.no_grad():
        torch.testing.assert_close(new(x), ref(x), rtol=1e-4, atol=1e-4)
    return mod, new, ref


def generate(source: str, skill: str | None = None, params: dict | None = None,
             size: str = "small") -> Candidate:
    """The first candidate, or the candidate after applying `skill` (a template id), for `size`."""
    task = AuthorTask(problem=problem(source, size=size), device="cpu")
    first = author().generate(task)
    if skill is None:
        return first
    task.best = first
    return author().apply(task, Plan(skill_id=skill, params=params or {}))


def evaluate(problem_source: str, candidate_source: str, trials: int = 2, size: str = "small",
             precision: str | None = None) -> EvalResult:
    """Run the evaluator's worker in this process (CPU, interpreter): correctness only, no timing
    stage (tests/eval covers the timed runs' checks; CPU timings are no speedups)."""
    options = {"device": "cpu", "size": size, "trials": trials, "baselines": False, "timing": False}
    if precision is not None:
        options["precision"] = precision
    req = {"problem_source": problem_source, "candidate_source": candidate_source,
           "problem_name": "<problem>", "candidate_name": "<candidate>", "options": options}
    with tempfile.TemporaryDirectory() as d:
        return Worker(req, Path(d) / "progress").run()


def templates_used(c: Candidate) -> list[str]:
    return list(c.author_state.templates)


__all__ = ["evaluate", "generate", "problem", "templates_used"]


def forward_text(source: str) -> str:
    """The candidate from the method that computes the forward on: `_eager_forward` when the
    forward replays as a CUDA graph (cuda-graph-replay renames the original), else `forward`."""
    name = "    def _eager_forward" if "    def _eager_forward" in source else "    def forward"
    return source[source.index(name):]


def count_autotuner_runs(mod: types.ModuleType, names: str = r".*") -> Counter:
    """Counts, per kernel name (matching `names` in full), the launches of a generated module's
    autotuned kernels that go through the autotuner. A launch plan holding the autotuner's pick
    calls the compiled function (`kern.fn`) directly, which is not counted."""
    runs: Counter = Counter()
    for name, kern in vars(mod).items():
        if isinstance(kern, Autotuner) and re.fullmatch(names, name):
            def run(*args, _k=kern, _n=name, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
                runs[_n] += 1
                return Autotuner.run(_k, *args, **kw)
            kern.run = run
    return runs


_EXPR_PROBLEM = '''
import torch
import torch.nn as nn
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, {args}):
        return {expr}
def get_inputs():
    return [{inputs}]
def get_init_inputs():
    return []
'''


def expr_problem(expr: str, inputs: str, args: str = "x", init: str = "") -> str:
    """A problem source whose forward returns `expr` of `args` (inputs `inputs`; `init`: lines of
    __init__ after super().__init__())."""
    init = "\n".join("        " + ln for ln in init.splitlines()) if init else ""
    return _EXPR_PROBLEM.format(expr=expr, inputs=inputs, args=args, init=init)
