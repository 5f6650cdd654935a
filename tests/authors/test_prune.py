"""Pruning a candidate to the kernels its verified run launched (authors/prune.py): on small
hand-written launchers (each rule), and on the built-in author's real output for suite problems,
judged by the real evaluator on the CPU: the pruned file is correct, launches the same kernels
and is much shorter."""

from __future__ import annotations

import ast
import textwrap
import types
from pathlib import Path

import pytest
import torch
from author_util import generate
from kernelskill.authors.prune import PruneError, jit_kernels, prune
from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

ROOT = Path(__file__).resolve().parents[2]
WHERE = "p at small sizes (N=8) on cpu"

HEAD = '''"""A candidate."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

UNUSED = 3


@triton.jit
def _dev(x):
    return x * 2


# Kernel A's comment stays with it.
@triton.jit
def _ka(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


# Kernel B goes with its comment block,
# both lines of it.
@triton.jit
def _kb(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, _dev(tl.load(x_ptr + offs, mask=m)), mask=m)


def _launch(kern, n, args):
    kern[(triton.cdiv(n, 64),)](*args, n, BLOCK=64)
'''

MODEL = '''

class ModelNew(nn.Module):
    def forward(self, x):
        return _run(x)
'''


def source(run: str) -> str:
    return HEAD + "\n\n" + textwrap.dedent(run).strip("\n") + "\n" + MODEL


def load(src: str) -> types.ModuleType:
    mod = types.ModuleType("pruned_candidate")
    exec(compile(src, "<pruned>", "exec"), mod.__dict__)
    return mod


def test_a_branch_launching_only_a_pruned_kernel_raises_naming_the_verified_shapes() -> None:
    src = source('''
        def _run(x):
            y = torch.empty_like(x)
            # small inputs take B
            if x.numel() < 16:
                _launch(_kb, x.numel(), (x, y))
            else:
                _launch(_ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert jit_kernels(ast.parse(out.source)) == {"_ka"} and out.kernels == ["_ka"] and out.raises == 1
    assert {"_kb", "_dev", "UNUSED", "math"} <= set(out.removed)
    assert "Kernel B goes" not in out.source and "both lines of it" not in out.source
    assert "# Kernel A's comment stays with it." in out.source and "# small inputs take B" in out.source
    mod = load(out.source)
    x = torch.randn(100)
    assert torch.equal(mod.ModelNew()(x), x + 1)
    with pytest.raises(RuntimeError, match=r"verified this solution for p at small sizes \(N=8\) on cpu"):
        mod.ModelNew()(torch.randn(4))


def test_a_chain_whose_every_branch_raises_collapses_and_so_do_its_callers() -> None:
    src = source('''
        def _pick(x, y, wide):
            if wide:
                _launch(_kb, x.numel(), (x, y))
            else:
                _kb[(1,)](x, y, x.numel(), BLOCK=64)


        def _run(x):
            y = torch.empty_like(x)
            if x.dim() > 3:
                z = x + 1
                _pick(x, y, True)
                return z
            _launch(_ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert "_pick" in out.removed and "z = x + 1" not in out.source  # the whole branch is one raise
    body = next(n for n in ast.parse(out.source).body if isinstance(n, ast.FunctionDef) and n.name == "_run")
    assert isinstance(body.body[1], ast.If) and isinstance(body.body[1].body[0], ast.Raise)


def test_an_elif_chain_whose_tail_raises_becomes_one_else() -> None:
    src = source('''
        def _run(x):
            y = torch.empty_like(x)
            if x.dim() == 1:
                _launch(_ka, x.numel(), (x, y))
            elif x.dim() == 2:
                _launch(_kb, x.numel(), (x, y))
            elif x.dim() == 3:
                _kb[(1,)](x, y, x.numel(), BLOCK=64)
            else:
                _launch(_kb, 1, (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert "elif" not in out.source and out.raises == 1
    run = next(n for n in ast.parse(out.source).body if isinstance(n, ast.FunctionDef) and n.name == "_run")
    chain = run.body[1]
    assert isinstance(chain, ast.If) and [type(n) for n in chain.orelse] == [ast.Raise]
    mod = load(out.source)
    assert torch.equal(mod.ModelNew()(torch.zeros(3)), torch.ones(3))
    with pytest.raises(RuntimeError, match="_kb"):
        mod.ModelNew()(torch.zeros(1, 1, 1))


def test_guards_on_different_values_of_one_mode_raise_together_unless_the_mode_may_change() -> None:
    src = source('''
        class _Plan:
            mode = 0


        def _bump(p):
            p.mode += 1


        def _run(x, p=_Plan()):
            y = torch.empty_like(x)
            if p.mode:
                w = x * 2
                if p.mode != 1:
                    _launch(_kb, x.numel(), (x, y))
                if p.mode != 2:
                    _kb[(1,)](w, y, x.numel(), BLOCK=64)
            if x.dim() > 1:
                if p.mode != 1:
                    _launch(_kb, x.numel(), (x, y))
                _bump(p)
                if p.mode != 2:
                    _kb[(1,)](x, y, x.numel(), BLOCK=64)
            _launch(_ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert "w = x * 2" not in out.source  # `if p.mode:` always raises: mode is 1 or 2 or neither
    assert "_bump(p)" in out.source  # the mode may change in between: each guard raises alone
    assert out.raises == 3


def test_an_early_return_keeps_the_function_and_the_code_before_the_launch() -> None:
    src = source('''
        def _b(x, y):
            if x.numel() == 0:
                return y
            _launch(_kb, x.numel(), (x, y))
            return y


        def _run(x):
            y = torch.empty_like(x)
            if x.dim() == 1:
                return _b(x, y)
            _launch(_ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    mod = load(out.source)
    empty = torch.empty(0)
    assert mod._b(empty, empty) is empty  # the path that launches nothing still runs
    with pytest.raises(RuntimeError, match="_kb"):
        mod.ModelNew()(torch.randn(8))
    assert torch.equal(mod.ModelNew()(torch.ones(2, 3)), torch.full((2, 3), 2.0))


def test_a_kernel_chosen_by_a_conditional_expression_gets_a_guard() -> None:
    src = source('''
        def _run(x):
            y = torch.empty_like(x)
            col = x.dim() > 1
            _launch(_kb if col else _ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert "_kb" in out.removed and "_launch(_ka, x.numel(), (x, y))" in out.source
    mod = load(out.source)
    assert torch.equal(mod.ModelNew()(torch.zeros(5)), torch.ones(5))
    with pytest.raises(RuntimeError, match="_kb"):
        mod.ModelNew()(torch.zeros(2, 2))


def test_a_call_that_may_launch_a_kept_kernel_is_left_alone() -> None:
    src = source('''
        def _either(x, y, first, second):
            _launch(first if x.dim() == 1 else second, x.numel(), (x, y))


        def _run(x):
            y = torch.empty_like(x)
            _either(x, y, _ka, _kb)
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert out.raises == 0 and "_kb" in jit_kernels(ast.parse(out.source)) and "_dev" not in out.removed


def test_a_launch_inside_try_raises_there_and_the_handler_still_runs() -> None:
    src = source('''
        def _run(x):
            y = torch.empty_like(x)
            try:
                _launch(_kb, x.numel(), (x, y))
            except RuntimeError:
                _launch(_ka, x.numel(), (x, y))
            return y
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert torch.equal(load(out.source).ModelNew()(torch.zeros(3)), torch.ones(3))


def test_pruning_twice_changes_nothing_and_a_full_launch_set_only_drops_dead_helpers() -> None:
    src = source('''
        def _run(x):
            y = torch.empty_like(x)
            _launch(_ka if x.numel() > 8 else _kb, x.numel(), (x, y))
            return y
    ''')
    once = prune(src, ["_ka"], WHERE).source
    assert prune(once, ["_ka"], WHERE).source == once
    both = prune(src, ["_ka", "_kb"], WHERE)
    assert both.raises == 0 and sorted(both.removed) == ["UNUSED", "math"]
    with pytest.raises(PruneError, match="ModelNew"):
        prune(src.replace("class ModelNew", "class Other"), ["_ka"], WHERE)


def test_kernels_handed_to_a_runtime_that_picks_one_become_none_when_pruned() -> None:
    # A launch plan passes every variant to one runtime call (the scan's _scan_run): the pruned
    # variant becomes None, its definition goes, and the runtime's launch raises on it.
    src = source('''
        def _pick(kernels, x):
            y = torch.empty_like(x)
            kern = kernels[0] if x.numel() > 8 else kernels[1]
            if kern is None:
                raise RuntimeError("pruned kernel")
            _launch(kern, x.numel(), (x, y))
            return y


        def _run(x):
            return _pick((_ka, _kb), x)
    ''')
    out = prune(src, ["_ka"], WHERE)
    assert "_pick((_ka, None), x)" in out.source and "def _kb" not in out.source
    assert out.kernels == ["_ka"] and "_kb" in out.removed
    model = load(out.source).ModelNew()
    x = torch.randn(40)
    assert torch.equal(model(x), x + 1.0)
    with pytest.raises(RuntimeError, match="pruned"):
        model(torch.randn(4))
    # Both kernels ran: nothing is replaced.
    assert "(_ka, _kb)" in prune(src, ["_ka", "_kb"], WHERE).source


# Suite problems across families: GEMM + epilogue, GEMM + row norm, softmax, scan, convolution +
# group norm + pooling. CPU sizes launch one variant of each launcher.
SUITE = ["level2/01_linear_gelu_scale.py", "level2/04_linear_layernorm_residual.py",
         "level1/22_softmax_last_dim.py", "level1/29_cumsum.py", "level2/05_conv2d_groupnorm_silu_maxpool.py"]


@pytest.mark.parametrize("name", SUITE)
def test_built_in_candidates_pruned_stay_correct_launch_the_same_kernels_and_shrink(name: str) -> None:
    problem = (ROOT / "problems" / name).read_text()
    cand = generate(problem)
    opts = EvalOptions(device="cpu", size="small", trials=1, timing=False, baselines=False)
    first = evaluate(problem, cand.source, opts)
    assert first.correct and first.kernel_names, first.reason
    out = prune(cand.source, first.kernel_names, f"{name} at small sizes on cpu")
    again = evaluate(problem, out.source, opts)
    assert again.correct, again.reason
    assert again.kernel_names == first.kernel_names == out.kernels
    # The group norm reads the convolution's channels-last output: its statistics, combine and
    # channels-last apply (the largest kernels) all run, so less of that file goes.
    keep = 0.85 if "groupnorm" in name else 0.75
    assert len(out.source.splitlines()) < keep * len(cand.source.splitlines())
    assert jit_kernels(ast.parse(out.source)) < jit_kernels(ast.parse(cand.source))
