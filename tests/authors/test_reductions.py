"""Reduction templates under the interpreter: every kind and attribute variant they claim, any
reduced dim set, strided / permuted views, size-1 and odd sizes, fused prologues and epilogues,
split and column paths, NaN and tie semantics, the suite's problems, and the generated kernels
compiled for sm_90. Softmax and losses: test_softmax_losses.py.

Candidates come from an author holding only this family's templates (plus the elementwise
chain), so these tests exercise exactly these templates whatever other families do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from author_util import evaluate, templates_used
from hypothesis import given
from hypothesis import strategies as st
from reductions_util import (
    ARG,
    FAMILY,
    PROBLEMS,
    RED,
    SLOW,
    check,
    generate,
    one,
    two,
)

# ---- reductions ------------------------------------------------------------------------------

KINDS = [
    ("torch.sum(x, dim=(0, 2))", RED), ("x.mean(dim=[-1, 0], keepdim=True)", RED),
    ("torch.amax(x, dim=(1, 2))", RED), ("torch.amin(x, dim=0, keepdim=True)", RED),
    ("torch.prod(x * 0.2 + 1.0, dim=1)", RED), ("torch.logsumexp(x * 3.0, dim=(1, 2))", RED),
    ("torch.var(x * 2.0 + 7.0, dim=1)", RED), ("torch.std(x, dim=(0, 2), unbiased=False, keepdim=True)", RED),
    ("torch.norm(x, dim=2)", RED), ("torch.norm(x, p=1, dim=0)", RED),
    ("x.norm(p=float('inf'), dim=(0, 1))", RED),
    ("torch.norm(x, p=3, dim=1, keepdim=True)", RED), ("torch.linalg.vector_norm(x, 0.5, dim=1)", RED),
    ("torch.norm(torch.relu(x), p=0, dim=1)", RED), ("torch.norm(x)", RED), ("torch.sum(x)", RED),
    ("torch.max(x)", RED), ("torch.min(x * 2.0)", RED), ("torch.argmax(x)", ARG),
    ("torch.argmin(x, dim=2, keepdim=True)", ARG), ("torch.min(x, dim=0)", ARG),
    ("torch.max(x, 1)[1] + torch.max(x, dim=2).values.sum()", ARG),
    ("torch.argmax(x, dim=None, keepdim=True)", ARG),
]


@pytest.mark.parametrize(("expr", "expect"), KINDS)
def test_reduction_kinds(expr: str, expect: str) -> None:
    check(one(expr), expect)


UNSUPPORTED = ["torch.norm(x, p='nuc', dim=(1, 2))", "torch.sum(x, dim=1, dtype=torch.float64)",
               "torch.var(x, dim=1, correction=2)", "F.softmax(x, 1, dtype=torch.float64)"]


@pytest.mark.parametrize("expr", UNSUPPORTED)
def test_unsupported_variants_stay_in_pytorch(expr: str) -> None:
    assert not set(templates_used(generate(one(expr)))) & set(FAMILY)


@SLOW
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
       dims=st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True),
       op=st.sampled_from(["sum", "mean", "amax", "amin", "var", "std", "logsumexp", "norm"]),
       keepdim=st.booleans(), permute=st.booleans(), chain=st.booleans())
def test_random_shapes_dims_and_views(shape: list, dims: list, op: str, keepdim: bool, permute: bool,
                                      chain: bool) -> None:
    rank = len(shape)
    dims = sorted({d % rank for d in dims})
    view = f"x.permute({', '.join(str(d) for d in reversed(range(rank)))})" if permute and rank > 1 else "x"
    arg = "torch.sigmoid(x) * 3.0 - x" if chain else "x"
    fn = "torch.linalg.vector_norm" if op == "norm" else f"torch.{op}"  # torch.norm: at most 2 dims
    expr = f"{fn}({arg}, dim={tuple(dims)!r}, keepdim={keepdim})"
    if chain:
        expr = f"F.silu({expr}) + 0.5"
    check(one(expr, shape=", ".join(map(str, shape)), view=view), RED)


@SLOW
@given(shape=st.lists(st.integers(1, 12), min_size=1, max_size=3), dim=st.integers(-3, 2),
       op=st.sampled_from(["argmax", "argmin", "max", "min"]), keepdim=st.booleans(), transpose=st.booleans())
def test_index_reductions_with_ties(shape: list, dim: int, op: str, keepdim: bool, transpose: bool) -> None:
    rank = len(shape)
    dim = dim % rank
    view = "x.transpose(0, -1)" if transpose else "x"
    res = f"torch.{op}(x, dim={dim}, keepdim={keepdim})"
    expr = f"{res}.values * 1.0, {res}.indices" if op in ("max", "min") else res
    # Values on a coarse grid: ties everywhere (the evaluator compares indices exactly).
    x = f"torch.randint(-3, 4, ({', '.join(map(str, shape))},)).float()"
    check(one(expr, view=view, x=x), ARG)


def _run(src: str, *inputs: torch.Tensor) -> object:
    return _run_source(generate(src).source, *inputs)


def test_nan_inf_and_ties_match_pytorch() -> None:
    x = torch.randint(-2, 3, (3, 9, 5)).float()
    x[0, 4, 1] = float("nan")
    x[1, :, 2] = float("-inf")
    x[2, 3, :] = float("nan")
    x[2, 7, :] = float("inf")
    for expr in ["torch.argmax(x, dim=1)", "torch.argmin(x, dim=2)", "torch.amax(x, dim=(0, 1))",
                 "torch.amin(x, dim=1)", "torch.max(x, dim=0).values", "torch.min(x, dim=1).indices",
                 "torch.logsumexp(x, dim=1)", "torch.argmax(x)"]:
        got, ref = _run(one(expr), x.clone()), eval(expr, {"torch": torch, "x": x.clone()})  # noqa: S307
        # Indices and extremes exactly; log-sum-exp to rounding (inf, -inf and NaN where PyTorch has them).
        rtol = 1e-6 if "logsumexp" in expr else 0.0
        torch.testing.assert_close(got, ref, equal_nan=True, rtol=rtol, atol=0)
    y = torch.full((2, 7), float("-inf"))
    y[1, 3] = 2.0
    assert torch.equal(_run(one("torch.logsumexp(x, dim=1)"), y), torch.logsumexp(y, dim=1))


def test_fused_prologue_and_epilogue_with_broadcast_parameters() -> None:
    src = two("torch.amax(torch.tanh(x * self.w), dim=1) * 2.0 + y", "torch.randn(2, 5, 3, 4)",
              "torch.randn(3, 1)", w="5, 1, 1")
    cand = check(src, RED)
    assert cand.source.count("@triton.jit") >= 2  # no separate elementwise kernels: one region


# ---- variants the planner applies --------------------------------------------------------------

VARIANTS = [
    ("split-row-reduction", {"chunk": 64}, "torch.var(x * 2.0 + 5.0, dim=1, keepdim=True) + 1.0", "3, 300"),
    ("split-row-reduction", {"chunk": 64}, "torch.max(x.round(), dim=1)", "3, 300"),
    ("split-row-reduction", {"chunk": 64}, "torch.logsumexp(x, dim=1)", "2, 200, 3"),
    ("split-row-reduction", {"chunk": 64}, "torch.softmax(x, dim=1) * 2.0", "3, 300"),
    ("split-row-reduction", {"chunk": 64}, "torch.log_softmax(x, dim=0)", "150, 2"),
    ("column-reduction-coalesced", {}, "torch.sum(x, dim=(0, 2))", "3, 5, 7"),
    ("column-reduction-coalesced", {}, "torch.argmin(x, dim=0)", "33, 70"),
    ("multi-row-blocks", {}, "torch.softmax(x, dim=-1)", "9, 40"),
    ("multi-row-blocks", {}, "torch.mean(x, dim=-1)", "70, 33"),
    ("reduction-to-scalar-two-stage", {}, "torch.norm(x) + torch.amax(x)", "5, 301"),
]


@pytest.mark.parametrize(("skill", "params", "expr", "shape"), VARIANTS)
def test_planner_variants(skill: str, params: dict, expr: str, shape: str) -> None:
    check(one(expr, shape=shape), skill, skill=skill, params=params, kernels=1)


def test_split_runs_two_kernels() -> None:
    """A forced split really splits: partial states then the combine kernel (on the CPU no split
    happens by itself: the nominal SM count is small)."""
    src = one("torch.sum(x * x, dim=1)", shape="2, 500")
    cand = generate(src, "split-row-reduction", {"chunk": 100})
    assert evaluate(src, cand.source, trials=1).custom_kernels >= 2


# ---- the suite ---------------------------------------------------------------------------------

SUITE = ["level1/22_softmax_last_dim.py", "level1/23_log_softmax.py", "level1/24_sum_dim1.py",
         "level1/25_mean_last_dim.py", "level1/26_max_dim0.py", "level1/27_argmax_dim1.py",
         "level1/28_min_dim2.py",
         "level1/32_mse_loss_per_sample.py", "level1/33_cross_entropy.py", "level1/34_smooth_l1_loss.py",
         "level1/35_kl_div.py", "level2/03_convtranspose3d_add_clamp_channel_mean.py",
         "level2/06_bmm_scale_softmax_dropout.py", "level2/07_linear_relu_logsumexp.py",
         "level2/08_conv2d_channel_scale_tanh_channel_max.py", "level2/12_conv3d_softmax_maxpool.py",
         "level2/14_conv2d_avgpool_sigmoid_channel_sum.py", "level2/20_linear_temperature_softmax.py"]


@pytest.mark.parametrize("name", SUITE)
def test_suite_problem_default_candidate(name: str) -> None:
    src = (PROBLEMS / name).read_text()
    cand = generate(src)
    assert set(templates_used(cand)) & set(FAMILY), templates_used(cand)
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


# ---- generated kernels compile for a real GPU ---------------------------------------------------

_COMPILE = '''
import importlib.util, json, sys, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
ns = vars(mod)
TY = {"torch.float32": "*fp32", "torch.int64": "*i64", "torch.int32": "*i32"}
for rec in json.load(open(sys.argv[2])):
    obj = ns[rec["fn"]]
    fn = obj.fn if hasattr(obj, "configs") else obj
    sig, const = {}, {}
    for p, (kind, v) in zip(fn.params, rec["args"]):
        if p.is_constexpr or (kind == "i" and v == 1):
            sig[p.name], const[p.name] = "constexpr", v
        else:
            sig[p.name] = TY[v] if kind == "t" else "fp32" if kind == "f" else "i32"
    triton.compile(ASTSource(fn, sig, const), target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    print("compiled", rec["fn"])
'''


@pytest.mark.skipif(shutil.which("ptxas") is None and not any(
    (Path(p) / "triton/backends/nvidia/bin/ptxas").exists() for p in sys.path), reason="no ptxas")
def test_generated_kernels_compile_for_sm90(tmp_path: Path) -> None:
    """The interpreter does not type-check like the compiler (loop-carried types, constexpr
    branches): compile every launched kernel, with its run-time constexprs, for sm_90."""
    import json

    from triton.runtime import interpreter

    src = one("torch.var(torch.relu(x), dim=1, keepdim=True) * 2.0 + torch.argmax(x, dim=0).sum()",
              shape="3, 300")
    cand = generate(src, "split-row-reduction", {"chunk": 64})
    records: list = []
    orig = interpreter.GridExecutor.__call__

    def record(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        names = self.arg_names
        vals = dict(zip(names, args, strict=False)) | {k: v for k, v in kwargs.items() if k in names}
        enc = [["t", str(v.dtype)] if isinstance(v, torch.Tensor) else ["i", v] if isinstance(v, int)
               and not isinstance(v, bool) else ["f", v] if isinstance(v, float) else ["b", v] for v in
               (vals[n] for n in names)]
        records.append({"fn": self.fn.__name__, "args": enc})
        return orig(self, *args, **kwargs)

    interpreter.GridExecutor.__call__ = record
    try:
        _run_source(cand.source, torch.randn(3, 300))
    finally:
        interpreter.GridExecutor.__call__ = orig
    assert len({r["fn"] for r in records}) >= 3
    (tmp_path / "cand.py").write_text(cand.source)
    (tmp_path / "launches.json").write_text(json.dumps(records))
    (tmp_path / "compile.py").write_text(_COMPILE)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, str(tmp_path / "compile.py"), str(tmp_path / "cand.py"),
                          str(tmp_path / "launches.json")], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("compiled") == len(records)


def _run_source(source: str, *inputs: torch.Tensor) -> object:
    """Import a candidate from a file (Triton reads kernel source through inspect) and run it."""
    import importlib.util
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(Path(f.name).stem, f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    os.unlink(f.name)
    return mod.ModelNew()(*inputs)
