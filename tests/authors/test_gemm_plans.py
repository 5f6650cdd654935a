"""Launch-plan cache of the GEMM launcher (runtime/gemm.py's _gemm_run and _gemm_planner): the plan
(views, sizes, batch strides, path, preparation, split-K, grids, epilogue operand geometry) is computed once
per operand signature on meta tensors, and the autotuner's pick is kept with it. Calls alternating
shapes, strided and broadcast operands and every launch path stay equal to torch, each signature
gets one plan, a repeated signature reuses its plan and pick, and layouts that copy an operand are
planned per call."""

from __future__ import annotations

import types
from collections.abc import Callable

import pytest
import torch
from author_util import count_autotuner_runs, generate
from kernelskill.authors.builtin.families.gemm.launch import SLOTS
from kernelskill.authors.builtin.runtime import gemm
from kernelskill.authors.builtin.runtime.gemm import _GEMM_ROW_MIN as ROW_MIN
from kernelskill.authors.builtin.runtime.gemm_prep import _GEMM_PREP_MIN as PREP_MIN
from kernelskill.eval.problem import exec_module
from kernelskill.eval.static.checks import run_static_checks

MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b, v):
        return torch.relu(torch.matmul(a, b) + v) * 2.0

def get_inputs():
    return [torch.randn(37, 45), torch.randn(45, 29), torch.randn(29)]

def get_init_inputs():
    return []
"""

LINEAR = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(45, 29)

    def forward(self, x):
        return torch.tanh(self.lin(x))

def get_inputs():
    return [torch.randn(37, 45)]

def get_init_inputs():
    return []
"""


def ref_matmul(a: torch.Tensor, b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.matmul(a, b) + v) * 2.0


def _module(source: str, edits: dict[str, str] | None = None) -> types.ModuleType:
    """The first candidate for `source`, with text `edits` applied (each must apply), loaded."""
    src = generate(source).source
    for old, new in (edits or {}).items():
        assert old in src, old
        src = src.replace(old, new)
    assert run_static_checks(src) == []  # shape-keyed plans are not output caching
    return exec_module(src, "gemm_plans_candidate.py", "gemm_plans_candidate")


def _launcher(mod: types.ModuleType) -> Callable:
    (fn,) = [v for v in vars(mod).values() if callable(v) and isinstance(getattr(v, "plans", None), dict)]
    return fn


def _tensors(x: object) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _tensors(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in _tensors(y)]
    return []


def _plan_tensors(plans: dict) -> list[torch.Tensor]:
    """Tensors a plan keeps (there should be none: a plan is metadata)."""
    return [t for p in plans.values() if p for t in _tensors(vars(p))]


def test_matmul_plans_per_signature_and_reuse() -> None:
    mod = _module(MATMUL)
    model = mod.ModelNew()
    gemm = _launcher(mod)
    runs = count_autotuner_runs(mod, r"_gem[mv]\w*_\d+")
    calls = [  # (a, b, v) makers: each a signature of its own
        lambda: (torch.randn(37, 45), torch.randn(45, 29), torch.randn(29)),
        lambda: (torch.randn(45, 37).t(), torch.randn(29, 45).t(), torch.randn(29)),  # transposed views
        lambda: (torch.randn(2, 13, 45), torch.randn(45, 29), torch.randn(13, 29)),  # batch folded into M
        lambda: (torch.randn(4, 1, 9, 45), torch.randn(3, 45, 29), torch.randn(29)),  # broadcast batch dims
        lambda: (torch.randn(3, 17, 40), torch.randn(3, 40, 19)[:, :, ::2], torch.randn(3, 17, 1)),  # strided
        lambda: (torch.randn(30, 45), torch.randn(45, 1), torch.randn(30, 1)),  # N = 1: the CUDA-core kernel
        lambda: (torch.randn(1, 45), torch.randn(45, 29), torch.randn(29)),  # M = 1: the same on C^T
    ]
    torch.manual_seed(0)
    for make in calls:
        a, b, v = make()
        torch.testing.assert_close(model(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
    plans = gemm.plans
    assert len(plans) == len(calls)
    assert all(p and len(p.pick) == 1 for p in plans.values())  # each kept its autotuning pick
    assert sum(p.gemv for p in plans.values()) == 2 and sum(p.swap for p in plans.values()) == 1
    assert _plan_tensors(plans) == []
    tuned = dict(runs)
    assert sum(tuned.values()) == len(calls)  # one launch through the autotuner per new plan
    before = dict(plans)
    for make in calls[::-1]:  # earlier signatures, new data: their plans and picks, no tuning
        a, b, v = make()
        torch.testing.assert_close(model(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
    assert dict(runs) == tuned
    assert len(plans) == len(before) and all(plans[k] is p for k, p in before.items())
    assert all(len(p.pick) == 1 for p in plans.values())


def test_split_k_plan_keeps_both_picks() -> None:
    mod = _module(MATMUL)
    gemm = _launcher(mod)
    runs = count_autotuner_runs(mod, r"_gem[mv]\w*_\d+")
    torch.manual_seed(1)
    for _ in range(2):
        a, b, v = torch.randn(9, 2100), torch.randn(2100, 12), torch.randn(12)
        torch.testing.assert_close(gemm(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
    (plan,) = gemm.plans.values()
    assert plan.split >= 2 and len(plan.pick) == 1 and len(plan.rpick) == 1
    assert sorted(runs.values()) == [1, 1]  # K chunks, then the reduction


@pytest.mark.parametrize("scales", ["chunk", "row"])
def test_prepared_paths_plan_once_per_signature(scales: str) -> None:
    """With the preparation threshold moved down, small shapes take each preparation mode: both
    operands (1), only B (2), only A with C^T (3); fp16 scales per K chunk or per row (bounds read
    from the data at each call)."""
    edits = {f"_GEMM_PREP_MIN = {PREP_MIN}": "_GEMM_PREP_MIN = 40"}
    if scales == "row":
        edits[f"_GEMM_ROW_MIN = {ROW_MIN}"] = "_GEMM_ROW_MIN = 0"
    mod = _module(MATMUL, edits)
    gemm = _launcher(mod)
    torch.manual_seed(2)
    shapes = [((50, 45), (45, 60)), ((60, 33), (33, 20)), ((20, 45), (45, 50)),
              ((2, 1, 44, 30), (3, 30, 41))]  # modes 1, 2, 3; mode 1 on broadcast batch dims
    for _ in range(2):
        for sa, sb in shapes:
            a, b, v = torch.randn(*sa), torch.randn(*sb), torch.randn(sb[-1])
            torch.testing.assert_close(gemm(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
    plans = gemm.plans
    assert len(plans) == len(shapes)
    assert sorted(p.prep for p in plans.values()) == [1, 1, 2, 3]
    assert {p.row_scaled for p in plans.values() if p.prep == 1} == {scales == "row"}
    assert all(len(p.pick) == 1 for p in plans.values()) and _plan_tensors(plans) == []


def test_layouts_that_copy_are_planned_per_call() -> None:
    """A left operand whose batch cannot fold into M as a view (reshape copies it) and an epilogue
    operand with more than three row dims (_gemm_ext materialises it) are copied at every call: the
    cache holds the empty marker for those signatures, never a copy."""
    mod = _module(MATMUL)
    gemm = _launcher(mod)
    torch.manual_seed(3)
    for _ in range(2):
        a = torch.randn(9, 2, 45).transpose(0, 1)
        b, v = torch.randn(45, 29), torch.randn(29)
        torch.testing.assert_close(gemm(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
        a, v = torch.randn(2, 3, 4, 5, 9, 45), torch.randn(2, 1, 4, 1, 9, 29)
        torch.testing.assert_close(gemm(a, b, v), ref_matmul(a, b, v), rtol=1e-4, atol=1e-4)
    assert list(gemm.plans.values()) == [(), ()]


@pytest.mark.parametrize("prepared", [False, True])
def test_linear_plans_take_the_weights_view(prepared: bool) -> None:
    """F.linear's weight is read as its transpose: a view the plan keeps as sizes and strides and
    each call takes again (as_strided), for 2-D, folded 3-D and non-contiguous inputs; `prepared`:
    both operands prepared with fp16 scales per row, whose bounds read the views."""
    edits = {f"_GEMM_PREP_MIN = {PREP_MIN}": "_GEMM_PREP_MIN = 1",
             f"_GEMM_ROW_MIN = {ROW_MIN}": "_GEMM_ROW_MIN = 0"} if prepared else {}
    mod = _module(LINEAR, edits)
    model = mod.ModelNew()
    gemm = _launcher(mod)
    torch.manual_seed(4)
    xs = [torch.randn(37, 45), torch.randn(3, 5, 45), torch.randn(45, 37).t(), torch.randn(37, 45)]
    for x in xs:
        torch.testing.assert_close(model(x), torch.tanh(model.lin(x)), rtol=1e-4, atol=1e-4)
    plans = gemm.plans
    assert len(plans) == 3
    weight = model.lin.weight
    assert all(p.views[1] == (weight.t().shape, weight.t().stride()) for p in plans.values())
    assert all(p.row_scaled == prepared for p in plans.values())
    assert all(len(p.pick) == 1 for p in plans.values()) and _plan_tensors(plans) == []


@pytest.mark.parametrize("x3", [False, True])
@pytest.mark.parametrize("split_k", [False, True])
@pytest.mark.parametrize("gemv", [False, True])
def test_kernel_slots_agree_with_the_runtime(x3: bool, split_k: bool, gemv: bool) -> None:
    """The launcher's kernel tuple (GemmLaunch: template names in SLOTS order, those present) puts
    each kernel where runtime _gemm_slots looks for it, for every set of kernels a template emits."""
    twins = ("_prep", "_prepb", "_prept") if x3 else ()
    present = {"main", *(f"main{t}" for t in twins)}
    if split_k:
        present |= {"part", "reduce", *(f"part{t}" for t in twins)}
    if gemv:
        present |= {"rows", "cols"}
    order = [k for k in SLOTS if k in present]
    main, part, reduce, fma = gemm._gemm_slots(x3, split_k)
    assert [order[main + i] for i in range(1 + len(twins))] == ["main", *(f"main{t}" for t in twins)]
    if split_k:
        assert [order[part + i] for i in range(1 + len(twins))] == ["part", *(f"part{t}" for t in twins)]
        assert order[reduce] == "reduce"
    if gemv:
        assert order[fma:] == ["rows", "cols"]
