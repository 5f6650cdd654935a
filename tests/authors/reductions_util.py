"""Shared by the reduction, softmax and loss tests: an author holding only this family's templates
(plus the elementwise chain), candidates generated and judged by the real evaluator pipeline,
and problem templates with one or two inputs."""

from __future__ import annotations

from pathlib import Path

from author_util import evaluate, problem, templates_used
from hypothesis import HealthCheck, settings
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.pointwise.template import FusedElementwise
from kernelskill.authors.builtin.templates.loader import load_templates
from kernelskill.state.records import Candidate, Plan

FAMILY = ("fused-reduction-prologue-epilogue", "argmax-index-tracking", "online-softmax", "fused-row-loss",
          "elementwise-loss-grid-reduction", "split-row-reduction", "multi-row-blocks",
          "column-reduction-coalesced", "reduction-to-scalar-two-stage")
RED, ARG, SMX, ROWLOSS, ELOSS = FAMILY[:5]
PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
SLOW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_AUTHOR: BuiltinAuthor | None = None



def author() -> BuiltinAuthor:
    global _AUTHOR
    if _AUTHOR is None:
        loaded = load_templates()
        _AUTHOR = BuiltinAuthor({"fuse-elementwise-chain": FusedElementwise(),
                                 **{k: loaded[k] for k in FAMILY}})
    return _AUTHOR


def generate(src: str, skill: str | None = None, params: dict | None = None) -> Candidate:
    task = AuthorTask(problem=problem(src), device="cpu")
    first = author().generate(task)
    if skill is None:
        return first
    task.best = first
    return author().apply(task, Plan(skill_id=skill, params=params or {}))


def check(src: str, expect: str, skill: str | None = None, params: dict | None = None, kernels: int = 1,
          trials: int = 1) -> Candidate:
    cand = generate(src, skill, params)
    assert expect in templates_used(cand), templates_used(cand)
    result = evaluate(src, cand.source, trials=trials)
    assert result.correct, result.reason
    assert result.custom_kernels >= kernels
    return cand


ONE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        x = {view}
        return {expr}
def get_inputs():
    return [{x}]
def get_init_inputs():
    return []
'''


TWO = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn({w}))
    def forward(self, x, y):
        return {expr}
def get_inputs():
    return [{x}, {y}]
def get_init_inputs():
    return []
'''


def one(expr: str, shape: str = "4, 6, 5", view: str = "x", x: str | None = None) -> str:
    return ONE.format(expr=expr, view=view, x=x or f"torch.randn({shape})")


def two(expr: str, x: str, y: str, w: str = "1") -> str:
    return TWO.format(expr=expr, x=x, y=y, w=w)
