"""Launch-plan caches of the scan launchers (cumsum, cumprod, their reversed forms, fused masks and
exclusive-scan epilogues): the plan (geometry, chunking, grids, constexprs) is computed once per
operand signature on meta tensors, with the autotuner's pick of each launch kept beside it. Calls
alternating shapes, scanned orientations (row / lane kernels), strided and transposed inputs,
single-launch and chunked (two-phase) scans stay equal to PyTorch and get one plan per signature;
a signature seen before reuses its plan and pick; layouts that copy operands are planned per call."""

from __future__ import annotations

import ast
import inspect
import re
import types
from collections.abc import Callable

import pytest
import torch
from author_util import count_autotuner_runs, expr_problem, generate
from kernelskill.eval.problem import exec_module
from kernelskill.eval.static.checks import run_static_checks


def _module(expr: str, inputs: str, args: str = "x") -> types.ModuleType:
    cand = generate(expr_problem(expr, inputs, args))
    assert run_static_checks(cand.source) == []  # a shape-keyed plan is not output caching
    return exec_module(cand.source, "scan_plans_candidate.py", "scan_plans_candidate")


def _plans(mod: types.ModuleType) -> list[dict]:
    return [v for k, v in vars(mod).items() if k.startswith("_plans") and isinstance(v, dict)]


def _near_one(*shape: int) -> torch.Tensor:
    """Signed factors near 1: long products stay finite."""
    return (1 + 0.05 * torch.randn(*shape)) * torch.where(torch.randn(*shape) >= 0, 1.0, -1.0)


def _flip1(f: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: f(x.flip(1)).flip(1)


SCANS = {
    "cumsum": ("torch.cumsum(x, dim=1)", lambda x: torch.cumsum(x, 1), torch.randn),
    "reverse_cumsum": ("torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])",
                       _flip1(lambda x: torch.cumsum(x, 1)), torch.randn),
    "cumprod": ("torch.cumprod(x, dim=1)", lambda x: torch.cumprod(x, 1), _near_one),
    "reverse_cumprod": ("torch.cumprod(x.flip(1), 1).flip(1)", _flip1(lambda x: torch.cumprod(x, 1)),
                        _near_one),
}

# (input, row kernel?, launches: 2 for a chunked scan). On the CPU the plan sees one "SM", so a
# single line of >= 4 blocks (lane kernel: 4 x 64 steps; row kernel: 4 x 2048) is cut in two chunks.
CALLS = [
    (lambda r: r(3, 40, 5), False, 1),  # scanning a middle dim: lanes
    (lambda r: r(6, 50), True, 1),  # the contiguous dim: rows
    (lambda r: r(50, 6).t(), False, 1),  # a transposed matrix: its lines are adjacent lanes
    (lambda r: r(4, 30, 10)[:, :, ::2], False, 1),  # strided lanes (a slice), merged without a copy
    (lambda r: r(1, 600, 8), False, 2),  # too few lanes: chunked, two phases
    (lambda r: r(1, 17000), True, 2),  # one long row: chunked, two phases
    (lambda r: r(3, 40, 5), False, 1),  # the first signature again: its plan and pick are reused
]


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_plans_per_signature(name: str) -> None:
    expr, ref, rand = SCANS[name]
    mod = _module(expr, "torch.randn(3, 40, 5)")
    model = mod.ModelNew()
    runs = count_autotuner_runs(mod, r"_scan_\w*kernel\w*")
    seen: dict[tuple, tuple] = {}
    for k, (make, rows, launches) in enumerate(CALLS):
        torch.manual_seed(k)
        x = make(rand)
        before = runs.total()
        out = model(x)
        want = ref(x.double())
        torch.testing.assert_close(out, want.float(), rtol=1e-4, atol=1e-3 * (1 + want.abs().max().item()))
        (plans,) = _plans(mod)
        key = (x.shape, x.stride(), x.dtype, x.device)
        plan = plans[key]
        steps = plan[6]  # (constexprs, autotuning pick) per launch
        assert (plan[2], len(steps)) == (rows, launches), (k, plan[2], len(steps))
        assert all(pick for _, pick in steps)  # each launch kept the autotuner's pick
        if key in seen:
            assert plan is seen[key]
            assert runs.total() == before  # the kept picks ran the kernels directly: no autotuner pass
        else:
            assert runs.total() == before + launches
            seen[key] = plan
    assert len(_plans(mod)[0]) == len(seen) == len(CALLS) - 1

def test_copying_layout_is_planned_per_call() -> None:
    """Outer dims that do not merge (a permuted 4-D input) make the launcher copy the input: the
    cache keeps the empty marker and each call plans on its own copy."""
    mod = _module("torch.cumsum(x, dim=1)", "torch.randn(3, 40, 5)")
    model = mod.ModelNew()
    for seed in range(2):
        torch.manual_seed(seed)
        x = torch.randn(4, 5, 6, 7).permute(0, 2, 1, 3)
        torch.testing.assert_close(model(x), torch.cumsum(x, 1), rtol=1e-5, atol=1e-5)
    (plans,) = _plans(mod)
    assert list(plans.values()) == [()]


def test_empty_input_plans_no_launch() -> None:
    mod = _module("torch.cumsum(x, dim=1)", "torch.randn(3, 40, 5)")
    x = torch.randn(3, 0, 5)
    out = mod.ModelNew()(x)
    assert out.shape == x.shape
    (plan,) = _plans(mod)[0].values()
    assert plan[6] == []  # no launches


def test_masked_scan_plans_per_signature() -> None:
    """A fused mask (the scan's prologue): broadcast masks and strided operands give their own plans;
    operands the chain's collapse cannot express (5 non-mergeable dims) are copied on every call."""
    mod = _module("torch.cumsum(x * mask, dim=1)", "torch.randn(6, 300), torch.rand(6, 300) > 0.5",
                  args="x, mask")
    model = mod.ModelNew()
    calls = [(torch.randn(6, 300), torch.rand(6, 300) > 0.5),
             (torch.randn(6, 300), torch.rand(1, 300) > 0.5),  # broadcast mask
             (torch.randn(300, 6).t(), torch.rand(6, 300) > 0.5),  # transposed input
             (torch.randn(2, 70, 9), torch.rand(2, 70, 9) > 0.5),
             (torch.randn(6, 300), torch.rand(6, 300) > 0.5)]
    for x, m in calls:
        torch.testing.assert_close(model(x, m), torch.cumsum(x * m, 1), rtol=1e-4, atol=1e-4)
    (plans,) = _plans(mod)
    assert len(plans) == 4 and all(plans.values())
    x = torch.randn(2, 3, 4, 5, 6, 2)[..., 0].permute(4, 3, 2, 1, 0)
    m = torch.rand(6, 5, 4, 3, 2) > 0.5
    for _ in range(2):
        torch.testing.assert_close(model(x, m), torch.cumsum(x * m, 1), rtol=1e-4, atol=1e-4)
    assert len(plans) == 5 and plans[(x.shape, x.stride(), x.dtype, x.device, m.shape, m.stride(), m.dtype,
                                      m.device)] == ()


def test_exclusive_scan_plans_per_signature() -> None:
    """An exclusive scan (`cumsum(x) - x`: an epilogue reading the input again), forward and chunked."""
    mod = _module("torch.cumsum(x, dim=1) - x", "torch.randn(5, 70, 6)")
    model = mod.ModelNew()
    shapes = [(5, 70, 6), (4, 33), (1, 600, 8), (5, 70, 6)]
    for shape in shapes:
        x = torch.randn(*shape)
        torch.testing.assert_close(model(x), torch.cumsum(x.double(), 1).float() - x, rtol=1e-4, atol=1e-4)
    (plans,) = _plans(mod)
    assert len(plans) == 3
    assert [len(p[6]) for p in plans.values()] == [1, 1, 2]  # (1, 600, 8) is chunked


def test_each_scan_dim_has_its_own_plans() -> None:
    """The scanned dim is part of the launcher (a constant of its code): scans of one input over
    two dims keep separate caches, each with its own plan for the shared signature."""
    mod = _module("torch.cumsum(x, dim=1), torch.cumsum(x, dim=2)", "torch.randn(3, 40, 5)")
    model = mod.ModelNew()
    for shape in [(3, 40, 5), (2, 7, 90)]:
        x = torch.randn(*shape)
        a, b = model(x)
        torch.testing.assert_close(a, torch.cumsum(x, 1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(b, torch.cumsum(x, 2), rtol=1e-5, atol=1e-5)
    caches = _plans(mod)
    assert len(caches) == 2 and all(len(c) == 2 for c in caches)
    assert [next(iter(c.values()))[2] for c in caches] in ([False, True], [True, False])  # lanes vs rows


def test_scan_launchers_are_data_and_one_runtime_call() -> None:
    """A scan launcher's body is one _scan_run call naming its plan cache, planner and kernels, the
    input's presence and the fused chains' operand counts; the host logic lives in the runtime."""
    for expr, inputs, args, has_x, chain_ops in [
            ("torch.cumsum(x, dim=1)", "torch.randn(3, 40, 5)", "x", True, ()),
            ("torch.cumsum(x * mask, dim=1) * 2.0", "torch.randn(6, 30), torch.rand(6, 30) > 0.5", "x, mask",
             False, (2, 0)),
            ("torch.cumsum(x, dim=1) - x", "torch.randn(5, 70, 6)", "x", True, (1,))]:
        mod = _module(expr, inputs, args)
        tree = ast.parse(inspect.getsource(mod))
        (fn,) = [n for n in tree.body
                 if isinstance(n, ast.FunctionDef) and re.fullmatch(r"_scan_\d+", n.name)]
        (ret,) = fn.body
        assert isinstance(ret, ast.Return) and ast.unparse(ret.value.func) == "_scan_run"
        plans, planner, kernels, ops, _, x, chains = (ast.unparse(a) for a in ret.value.args)
        assert plans.startswith("_plans") and planner == f"{fn.name}_plan" and kernels.count("_kernel_") == 2
        assert ops == f"[{', '.join(a.arg for a in fn.args.args)}]"
        assert (x, chains) == (str(has_x), repr(chain_ops)), expr
