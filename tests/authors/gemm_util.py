"""Shared by the GEMM tests: an author with the GEMM family (and the elementwise template) only,
candidates generated and judged by the real evaluator pipeline, and a problem template with
the GEMM expression, shapes and epilogue filled in."""

from __future__ import annotations

from pathlib import Path

from author_util import evaluate, problem
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.pointwise.template import FusedElementwise
from kernelskill.authors.builtin.runtime.gemm import _GEMM_ROW_MIN as ROW_MIN
from kernelskill.authors.builtin.runtime.gemm_prep import _GEMM_PREP_MIN as PREP_MIN
from kernelskill.authors.builtin.templates.loader import load_templates
from kernelskill.eval.static.checks import run_static_checks
from kernelskill.state.records import Candidate, Plan

GEMM_IDS = {"gemm-epilogue-fusion", "gemm-tf32x3-strict-fp32", "gemm-tf32-tensor-cores", "gemm-tile-shapes",
            "gemm-grouped-tile-order", "gemm-split-k", "gemv-bandwidth-kernel", "batched-small-gemm",
            "triangular-matmul-skip-tiles", "symmetric-structure-half-work", "diagonal-matmul-as-scale",
            "matmul-reassociation"}
# Only this family and the elementwise template: other families' regions stay in PyTorch, so
# these tests judge the GEMM templates alone.
AUTHOR = BuiltinAuthor({"fuse-elementwise-chain": FusedElementwise(),
                        **{k: v for k, v in load_templates().items() if k in GEMM_IDS}})
ROOT = Path(__file__).resolve().parents[2]


def gen(src: str, skill: str | None = None, params: dict | None = None,
        precision: str = "default") -> Candidate:
    task = AuthorTask(problem=problem(src), device="cpu", precision=precision)
    first = AUTHOR.generate(task)
    if skill is None:
        return first
    task.best = first
    return AUTHOR.apply(task, Plan(skill_id=skill, params=params or {}))


def used(c: Candidate) -> list[str]:
    return list(c.author_state.templates)


def check(src: str, skill: str | None = None, expect: str | None = None, kernels: int = 1,
          params: dict | None = None, trials: int = 1) -> Candidate:
    cand = gen(src, skill, params)
    assert (expect or skill) in used(cand), used(cand)
    assert run_static_checks(cand.source) == []
    result = evaluate(src, cand.source, trials=trials)
    assert result.correct, result.reason
    assert result.custom_kernels >= kernels
    return cand


PROBLEM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear({k}, {n}, bias={bias})
        self.p = nn.Parameter(torch.randn({n}))
    def forward(self, a, b, v):
        y = {expr}
        return {tail}
def get_inputs():
    return [torch.randn({a}), torch.randn({b}), torch.randn({v})]
def get_init_inputs():
    return []
'''


def src_of(expr: str, a: str, b: str = "1", v: str = "1", k: int = 8, n: int = 8, bias: bool = True,
           tail: str = "y") -> str:
    return PROBLEM.format(expr=expr, a=a, b=b, v=v, k=k, n=n, bias=bias, tail=tail)


EPILOGUES = ["y", "F.gelu(y) * 0.5", "torch.relu(y + self.p)", "torch.clamp(torch.sigmoid(y) * v, -0.2, 0.7)",
             "F.leaky_relu(y, 0.1) - v", "F.silu(y) + y * self.p", "torch.tanh(y * self.p) * v + 1.0"]


# ---- prepared operands (runtime/gemm_prep.py): K-major TF32 hi / lo copies, three TF32 dots per step ------

def at_threshold(cand: Candidate, threshold: int) -> str:
    """The candidate with the preparation threshold moved, so that small shapes take those paths."""
    src = cand.source.replace(f"_GEMM_PREP_MIN = {PREP_MIN}", f"_GEMM_PREP_MIN = {threshold}")
    assert src != cand.source
    return src


def prepared(cand: Candidate, scales: str = "auto") -> str:
    """The candidate with the preparation threshold at 1: both operands prepared at any size, their
    fp16 parts scaled per row and K chunk at these sizes ("auto"), or per row over all of K ("row")."""
    src = at_threshold(cand, 1)
    if scales == "row":  # the output-size rule's threshold at 0: row scales at any size
        rule = f"_GEMM_ROW_MIN = {ROW_MIN}"
        assert rule in src
        src = src.replace(rule, "_GEMM_ROW_MIN = 0")
    return src
