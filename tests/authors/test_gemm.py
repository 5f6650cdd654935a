"""The GEMM templates under the interpreter: linear / matmul / bmm with fused epilogues, every
variant (split-K, matrix-vector kernels, triangular and symmetric rewrites, diagonal scaling,
reassociation, tile spaces, the TF32 policy), odd and size-1 shapes, strided views, and the
problem suite's GEMM problems. Candidates are judged by the real evaluator pipeline."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import author_util
import pytest
from author_util import evaluate, forward_text, problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.authors.base import AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.families.gemm.match import _F16_ROW_RULE
from kernelskill.authors.builtin.families.pointwise.template import FusedElementwise
from kernelskill.authors.builtin.runtime.gemm_prep import _GEMM_PREP_MIN as PREP_MIN
from kernelskill.authors.builtin.templates.loader import load_templates
from kernelskill.eval.api import evaluate as evaluate_api
from kernelskill.eval.static_checks import run_static_checks
from kernelskill.eval.types import EvalOptions
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


# ---- the default template: linear / matmul / bmm + epilogues -------------------------------------

EPILOGUES = ["y", "F.gelu(y) * 0.5", "torch.relu(y + self.p)", "torch.clamp(torch.sigmoid(y) * v, -0.2, 0.7)",
             "F.leaky_relu(y, 0.1) - v", "F.silu(y) + y * self.p", "torch.tanh(y * self.p) * v + 1.0"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 75), k=st.integers(1, 70), n=st.integers(1, 70), lead=st.sampled_from(["", "3, "]),
       transposed=st.booleans(), bias=st.booleans(), tail=st.sampled_from(EPILOGUES),
       v=st.sampled_from(["full", "row", "col"]))
def test_linear_with_epilogue(m: int, k: int, n: int, lead: str, transposed: bool, bias: bool, tail: str,
                              v: str) -> None:
    x = "a.transpose(-1, -2)" if transposed else "a"
    a = f"{lead}{k}, {m}" if transposed else f"{lead}{m}, {k}"
    vshape = {"full": f"{lead}{m}, {n}", "row": f"{n}", "col": f"{m}, 1"}[v]
    src = src_of(f"self.lin({x})", a, v=vshape, k=k, n=n, bias=bias, tail=tail)
    check(src, expect="gemm-epilogue-fusion")


MATMULS = [  # (expression, shapes of a, b)
    ("torch.matmul(a, b)", "37, 45", "45, 29"),
    ("a.T @ b", "45, 37", "45, 29"),
    ("torch.mm(a, b.t())", "37, 45", "29, 45"),
    ("torch.bmm(a, b)", "3, 17, 40", "3, 40, 19"),
    ("torch.bmm(a.transpose(1, 2), b)", "3, 40, 17", "3, 40, 19"),
    ("torch.matmul(a, b)", "2, 13, 48", "48, 40"),  # batch folded into M
    ("torch.matmul(a, b)", "48, 40", "3, 40, 21"),  # broadcast left operand
    ("torch.matmul(a, b)", "4, 1, 9, 33", "3, 33, 17"),  # broadcast batch dims
    ("a.permute(0, 2, 1, 3) @ b.permute(0, 2, 3, 1)", "2, 11, 3, 16", "2, 11, 3, 16"),  # attention layout
    ("torch.matmul(a[:, ::2], b)", "19, 66", "33, 1"),  # strided view, N = 1
    ("torch.matmul(a, b)", "1, 70", "70, 1"),  # size-1 M and N
]


@pytest.mark.parametrize(("expr", "a", "b"), MATMULS)
def test_matmul_forms(expr: str, a: str, b: str) -> None:
    check(src_of(expr, a, b, tail="torch.tanh(y) * 2.0 + 1.0"), expect="gemm-epilogue-fusion")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.integers(1, 4), m=st.integers(1, 70), k=st.integers(1, 70), n=st.integers(1, 70),
       ta=st.booleans(), tb=st.booleans())
def test_bmm_random_shapes_and_views(batch: int, m: int, k: int, n: int, ta: bool, tb: bool) -> None:
    a = f"{batch}, {k}, {m}" if ta else f"{batch}, {m}, {k}"
    b = f"{batch}, {n}, {k}" if tb else f"{batch}, {k}, {n}"
    x = "a.transpose(1, 2)" if ta else "a"
    y = "b.transpose(1, 2)" if tb else "b"
    check(src_of(f"torch.bmm({x}, {y})", a, b), expect="gemm-epilogue-fusion")


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
    if scales == "row":
        rule = f"row_scaled = prep == 1 and {_F16_ROW_RULE}"
        assert rule in src
        src = src.replace(rule, "row_scaled = prep == 1")
    return src


PREP_FORMS = [  # (expression, a, b) with {m}, {k}, {n} filled in
    ("torch.matmul(a, b)", "{m}, {k}", "{k}, {n}"),
    ("a.T @ b.T", "{k}, {m}", "{n}, {k}"),
    ("self.lin(a)", "2, {m}, {k}", "1"),
    ("torch.bmm(a.transpose(1, 2), b)", "3, {k}, {m}", "3, {k}, {n}"),
    ("torch.matmul(a, b)", "{m}, {k}", "2, {k}, {n}"),  # broadcast left operand: copied per batch
    ("torch.matmul(a[:, ::2], b[::2])", "{m}, {k2}", "{k2}, {n}"),  # strided views
]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(PREP_FORMS), m=st.integers(9, 70), k=st.integers(1, 70), n=st.integers(9, 70),
       tail=st.sampled_from(EPILOGUES[:3]), scales=st.sampled_from(["auto", "row"]))
def test_prepared_operands_any_shape_and_view(form: tuple[str, str, str], m: int, k: int, n: int,
                                              tail: str, scales: str) -> None:
    expr, a, b = form
    a, b = (x.format(m=m, k=k, n=n, k2=2 * k) for x in (a, b))
    src = src_of(expr, a, b, v="1", k=k, n=n, tail=tail.replace("self.p", "1.5"))
    cand = gen(src)
    assert "_gemm_3xf16_kernel" in cand.source
    result = evaluate(src, prepared(cand, scales), trials=1)
    assert result.correct, result.reason
    assert result.custom_kernels >= 2  # the preparation pass and the three-dot GEMM


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(PREP_FORMS), m=st.integers(40, 90), k=st.integers(1, 70), n=st.integers(9, 39),
       tail=st.sampled_from(EPILOGUES[:3]))
def test_small_n_prepares_only_b_and_splits_a_in_registers(form: tuple[str, str, str], m: int, k: int,
                                                           n: int, tail: str) -> None:
    # M at or above the threshold, N below: A (any layout, batch or view) is read as it is.
    expr, a, b = form
    a, b = (x.format(m=m, k=k, n=n, k2=2 * k) for x in (a, b))
    src = src_of(expr, a, b, v="1", k=k, n=n, tail=tail.replace("self.p", "1.5"))
    result = evaluate(src, at_threshold(gen(src), 40), trials=1)
    assert result.correct, result.reason
    names = " ".join(result.kernel_names)
    assert "_gemm_3xtf32_split_a_kernel" in names and "_gemm_prep_kernel" in names, names


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(PREP_FORMS), m=st.integers(9, 19), k=st.integers(1, 70), n=st.integers(40, 90),
       tail=st.sampled_from(EPILOGUES[:4]))  # M < 40 for every form (the linear one folds 2 x m rows)
def test_small_m_prepares_only_a_and_computes_c_transposed(form: tuple[str, str, str], m: int, k: int,
                                                           n: int, tail: str) -> None:
    # The mirror of the small-N case: wgmma reads its right operand from shared memory, so the kernel
    # computes C^T = B^T A^T with B^T split in registers and A prepared; output, bias and epilogue
    # operands (row and column vectors included) are indexed transposed.
    expr, a, b = form
    a, b = (x.format(m=m, k=k, n=n, k2=2 * k) for x in (a, b))
    src = src_of(expr, a, b, v=f"{n}" if "v" in tail else "1", k=k, n=n, tail=tail.replace("self.p", "1.5"))
    result = evaluate(src, at_threshold(gen(src), 40), trials=1)
    assert result.correct, result.reason
    names = " ".join(result.kernel_names)
    assert "_gemm_3xtf32_split_a_t_kernel" in names and "_gemm_prep_kernel" in names, names


@pytest.mark.parametrize(("a", "b", "kernel"),
                         [("50, 2100", "2100, 12", "_gemm_splitk_3xtf32_split_a_kernel"),
                          ("12, 2100", "2100, 50", "_gemm_splitk_3xtf32_split_a_t_kernel")])
def test_one_side_prepared_kernels_split_k_too(a: str, b: str, kernel: str) -> None:
    n = int(b.split(",")[1])
    src = src_of("torch.relu(a @ b + self.p)", a, b, n=n)
    result = evaluate(src, at_threshold(gen(src), 40), trials=1)
    assert result.correct, result.reason
    assert any(kernel + "_" in k for k in result.kernel_names), result.kernel_names


def test_three_dot_kernels_compile_to_wgmma_for_sm90(tmp_path: Path) -> None:
    """The interpreter runs what the GPU compiler may reject (a layout A cannot take in registers,
    a shared-memory overflow): compile every three-dot kernel (both operands prepared, one side
    prepared, and its transposed twin) for sm_90a with ptxas (shipped with Triton; no GPU needed).
    Each must issue wgmma, and each keeps its best tile on an H200 spill-free: 128x64x32 at 4 warps
    for the split-A layouts (problems/measurements/h200-2026-11-30-gemm/gemm_prepared_mode3.txt),
    128x128x64 at 8 warps on fp16 parts (gemm_fp16x3.txt)."""
    import triton

    if "nvidia" not in triton.backends.backends:
        pytest.skip("Triton's NVIDIA backend is not installed")
    cand = tmp_path / "cand.py"
    cand.write_text(gen(src_of("F.gelu(self.lin(a)) * 0.5", "500, 64", k=64, n=48)).source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("gemm_compile.py")), str(cand)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    kernels = {r["kernel"].rsplit("_", 1)[0] for r in rows}
    variants = ("3xf16", "3xtf32_split_a", "3xtf32_split_a_t")
    assert kernels == {f"_gemm{s}_{v}_kernel" for s in ("", "_splitk") for v in variants}, kernels
    assert all(r["wgmma"] > 0 for r in rows), rows
    for k in kernels:
        tile, warps = ([128, 128, 64], 8) if "3xf16" in k else ([128, 64, 32], 4)
        best = [r for r in rows
                if r["kernel"].startswith(k + "_") and r["tile"] == tile and r["warps"] == warps]
        assert best and all(r["spill_bytes"] == 0 for r in best), (k, best)


def test_default_gemm_splits_long_k_at_run_time_also_on_prepared_operands() -> None:
    src = src_of("torch.relu(a @ b + self.p)", "9, 2100", "2100, 12", n=12)
    cand = gen(src)
    assert "gemm-split-k" not in used(cand) and "_gemm_splitk_3xf16_kernel" in cand.source
    plain = evaluate(src, cand.source, trials=1)
    assert plain.correct and plain.custom_kernels == 2  # K chunks, then the reduction
    for scales in ("auto", "row"):  # per (row, K chunk), then per row: each chunk scales once
        prep = evaluate(src, prepared(cand, scales), trials=1)
        assert prep.correct, prep.reason
        assert prep.custom_kernels == 3  # preparation, K chunks on prepared operands, reduction


@pytest.mark.parametrize(("m", "n", "kernel"), [(PREP_MIN, PREP_MIN + 3, "_gemm_3xf16_kernel"),
                                                (PREP_MIN - 1, PREP_MIN + 3, "_gemm_3xtf32_split_a_t_kernel"),
                                                (PREP_MIN + 3, PREP_MIN - 1, "_gemm_3xtf32_split_a_kernel"),
                                                (PREP_MIN - 1, PREP_MIN - 1, "_gemm_kernel")])
def test_operands_are_prepared_from_the_threshold_up(m: int, n: int, kernel: str) -> None:
    # Both sides at the threshold: both operands; one side: the other side's (small) operand; none.
    src = src_of("torch.relu(a @ b)", f"{m}, 8", f"8, {n}")
    names = evaluate(src, gen(src).source, trials=1).kernel_names
    assert [k.rsplit("_", 1)[0] for k in names if "prep_kernel" not in k] == [kernel], names
    assert any("prep_kernel" in k for k in names) == (kernel != "_gemm_kernel"), names


# On the GPU the three dots really are one-pass TF32: accuracy at long K is the point. Summing them
# straight into the running accumulator drifted to ~1e-2 at K = 4096 on an H200, which these fail.
GPU_GEMMS = [("torch.relu(a @ b)", "1024, 4096", "4096, 1536"),
             ("self.lin(a) * 2.0", "2, 640, 3072", "1"),
             ("a.T @ b", "8192, 512", "8192, 768"),
             ("a @ b", "256, 16384", "16384, 384"),  # 6 output tiles: split K as well
             ("a @ b", "65536, 4096", "4096, 48"),  # N small: B prepared, A split in registers
             ("self.lin(a) * 2.0", "48, 4096", "1")]  # M small: A prepared, C^T with W split


@pytest.mark.gpu
@pytest.mark.parametrize(("expr", "a", "b"), GPU_GEMMS)
def test_prepared_operands_meet_the_fp32_rule_on_gpu(expr: str, a: str, b: str) -> None:
    k = int(a.split(",")[-1]) if "lin" in expr else 8
    src = src_of(expr, a, b, k=k, n=2048)
    cand = gen(src)
    r = evaluate_api(src, cand.source, EvalOptions(device="cuda", size="full", trials=2, baselines=False),
                     problem_name="prepared-gemm")
    assert r.correct, r.reason
    assert r.custom_kernels >= 2


@pytest.mark.parametrize(("expr", "b", "kernels"), [("a @ b", "40, 30", 2), ("a @ b.t()", "30, 40", 1)])
def test_tf32_policy_copies_only_operands_that_are_not_k_major(expr: str, b: str, kernels: int) -> None:
    src = src_of(expr, "20, 40", b)
    cand = gen(src, precision="tf32")
    assert "_gemm_3xf16_kernel" not in cand.source
    result = evaluate(src, prepared(cand), trials=1)
    assert result.correct, result.reason
    assert result.custom_kernels == kernels


@pytest.mark.parametrize(("a", "n", "v"), [("3, 40", 50, "3, 50"), ("2, 2, 40", 50, "50"),
                                          ("60, 40", 5, "60, 5"), ("2, 30, 40", 3, "30, 1")])
def test_matrix_vector_shapes_take_the_fma_kernel(a: str, n: int, v: str) -> None:
    # M or N <= 8 at run time: the CUDA-core kernel (for small M on C^T), bias and operands included.
    src = src_of("self.lin(a)", a, v=v, k=40, n=n, tail="F.relu(y * self.p) + v")
    cand = check(src, expect="gemm-epilogue-fusion")
    assert "_gemv_kernel" in cand.source


def test_rank1_operands_stay_in_pytorch_by_default() -> None:
    src = src_of("torch.matmul(a, v) + 1.0", "30, 20", v="20")
    cand = gen(src)
    assert "_gemm_kernel" not in cand.source and "torch.matmul(a, v)" in cand.source
    assert evaluate(src, cand.source, trials=1).correct


def test_strict_candidates_never_use_one_pass_tf32() -> None:
    cand = gen(src_of("F.relu(self.lin(a))", "9, 8"))
    dots = re.findall(r'input_precision="(\w+)"', cand.source)
    # One-pass dots appear only as the compensated triple on prepared operands, which the static
    # check recognises; a lone one would be flagged.
    assert "tf32x3" in dots and set(dots) == {"tf32x3", "tf32"} and dots.count("tf32") % 3 == 0
    assert run_static_checks(cand.source, precision="strict") == []
    lone = cand.source.replace('part = tl.dot(al, b, acc=part, input_precision="tf32")',
                               'part = tl.dot(a, b, acc=part, input_precision="tf32")')
    assert lone != cand.source and run_static_checks(lone, precision="strict")
    ieee = gen(src_of("F.relu(self.lin(a))", "9, 8"), "gemm-tf32x3-strict-fp32", {"input_precision": "ieee"})
    assert set(re.findall(r'input_precision="(\w+)"', ieee.source)) == {"ieee"}
    assert evaluate(src_of("F.relu(self.lin(a))", "9, 8"), ieee.source, trials=1).correct


def test_tf32_template_only_under_the_tf32_policy() -> None:
    src = src_of("torch.matmul(a, b) * 3.0", "20, 16", "16, 24")
    strict = gen(src)
    assert "gemm-tf32-tensor-cores" not in used(strict)
    relaxed = gen(src, precision="tf32")
    assert "gemm-tf32-tensor-cores" in used(relaxed)
    assert set(re.findall(r'input_precision="(\w+)"', relaxed.source)) == {"tf32"}
    assert run_static_checks(relaxed.source, precision="tf32") == []
    # Under default and strict eager's matmuls are IEEE fp32: the evaluator would refuse it (under
    # `default` numerically: one-pass TF32 misses eager's own fp32 error by far).
    assert run_static_checks(relaxed.source, precision="strict")
    assert "gemm-tf32-tensor-cores" not in used(gen(src, precision="default"))


# ---- variants (non-default skills) --------------------------------------------------------------

VARIANTS = [  # (skill, expression, a, b, v, kernels launched)
    ("gemm-split-k", "torch.relu(a @ b + self.p)", "9, 2100", "2100, 12", "12", 2),
    ("gemm-split-k", "F.gelu(self.lin(a)) * v", "3, 5, 2100", "1", "12", 2),
    ("gemm-split-k", "torch.bmm(a, b)", "2, 40, 33", "2, 33, 50", "1", 1),  # short K: plain GEMM
    ("gemv-bandwidth-kernel", "torch.matmul(a, b)", "300, 170", "170, 1", "1", 1),
    ("gemv-bandwidth-kernel", "torch.matmul(a.t(), v) + 1.0", "170, 61", "1", "170", 1),
    ("gemv-bandwidth-kernel", "torch.tanh(self.lin(a)) - v", "3, 8", "1", "8", 1),
    ("gemv-bandwidth-kernel", "v @ b", "1", "70, 50", "70", 1),
    ("gemv-bandwidth-kernel", "a @ b", "2, 40, 50", "50, 37", "1", 1),  # large shapes: tensor cores
    ("gemm-tile-shapes", "a @ b", "70, 40", "40, 70", "1", 1),
    ("gemm-grouped-tile-order", "torch.matmul(a, b) + v", "5, 1, 20, 40", "3, 40, 30", "30", 1),
    ("batched-small-gemm", "torch.bmm(a, b.transpose(1, 2))", "5, 20, 40", "5, 30, 40", "1", 1),
    ("symmetric-structure-half-work", "torch.sigmoid(a @ a.T + v)", "70, 40", "1", "70", 1),
    ("symmetric-structure-half-work", "torch.bmm(a.transpose(1, 2), a)", "2, 40, 70", "1", "1", 1),
]


@pytest.mark.parametrize(("skill", "expr", "a", "b", "v", "kernels"), VARIANTS)
def test_variant_templates(skill: str, expr: str, a: str, b: str, v: str, kernels: int) -> None:
    k = int(a.split(",")[-1])
    check(src_of(expr, a, b, v, k=k, n=12 if "split" in skill else 8), skill, kernels=kernels)


def test_split_k_splits_long_k_only() -> None:
    cand = gen(src_of("a @ b", "9, 2100", "2100, 12"), "gemm-split-k")
    assert "_gemm_splitk_kernel" in cand.source and "_gemm_splitk_reduce" in cand.source


@pytest.mark.parametrize(("expr", "outer"), [
    ("torch.tril(a @ b)", True),
    ("torch.triu(torch.matmul(a, b), diagonal=3) + v", True),
    ("torch.tril(a) @ b.triu(-3)", False),
    ("torch.triu(torch.tril(a) @ torch.tril(b), diagonal=2) * 2 + v", True),
])
def test_triangular_rewrite(expr: str, outer: bool) -> None:
    cand = check(src_of(expr, "2, 70, 70", "2, 70, 70", "70"), expect="triangular-matmul-skip-tiles")
    forward = cand.source.split("class ModelNew")[1]
    assert "matmul(" not in forward and " @ " not in forward
    # The output triangle is masked inside the kernel: only the operands' tril/triu ops remain.
    tri_ops = expr.count("tril(") + expr.count("triu(")
    assert forward.count("tril(") + forward.count("triu(") == tri_ops - outer


def test_triangular_needs_the_forwards_own_tril() -> None:
    # A triangle made only by get_inputs() is not a structure the rewrite may rely on, and a
    # matmul whose output is also read elsewhere keeps its plain form.
    src = src_of("a @ b", "40, 40", "40, 40", tail="torch.tril(y), y").replace(
        "torch.randn(40, 40), torch.randn(40, 40)", "torch.randn(40, 40).tril(), torch.randn(40, 40)")
    cand = gen(src)
    assert "triangular-matmul-skip-tiles" not in used(cand)
    assert evaluate(src, cand.source, trials=1).correct


@pytest.mark.parametrize("expr", ["torch.diag(v) @ b", "a @ torch.diag(v) + 1", "torch.diag_embed(v) @ b",
                                  "torch.diag(v) @ v"])
def test_diagonal_matmul_becomes_a_scale(expr: str) -> None:
    v = "3, 30" if "embed" in expr else "30"
    b = "3, 30, 20" if "embed" in expr else "30, 20"
    # The rewrite leaves an elementwise product, which the elementwise template fuses.
    cand = check(src_of(expr, "20, 30", b, v), expect="fuse-elementwise-chain")
    assert "torch.diag" not in cand.source.split("class ModelNew")[1]


@pytest.mark.parametrize("expr", ["(a @ b) @ v", "torch.matmul(v, a @ b.T)"])
def test_reassociation(expr: str) -> None:
    b = "30, 40" if ".T" in expr else "40, 30"
    cand = check(src_of(expr, "30, 40", b, "30"), "matmul-reassociation", kernels=0)
    assert "_matmul_chain" in cand.source


# ---- the problem suite --------------------------------------------------------------------------

# Problems whose GEMMs a default GEMM template must claim (all other regions stay in PyTorch here).
SUITE = [p for p in sorted(glob.glob(str(ROOT / "problems/level[123]/*.py")))
         if re.search(r"nn\.Linear|torch\.(matmul|bmm|mm)\(|\) @ | @ [a-z]", Path(p).read_text())]


@pytest.mark.parametrize("path", SUITE, ids=[Path(p).stem for p in SUITE])
def test_suite_problem(path: str) -> None:
    src = Path(path).read_text()
    cand = gen(src)
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason
    if "gemm-epilogue-fusion" in used(cand):
        assert result.custom_kernels >= 1
    if re.search(r"torch\.(matmul|bmm)\(|nn\.Linear", src) and not cand.author_state.verbatim:
        assert "gemm-epilogue-fusion" in used(cand)


# ---- fp16 parts (both operands prepared): scaled by powers of two, any magnitude ------------------

WIDE = '''
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b) - 0.5 * (a @ b)
def get_inputs():
    a = torch.randn(70, 90) * torch.logspace({lo}, {hi}, 70)[torch.randperm(70)][:, None]
    return [a, torch.randn(90, 50) * {sb}]
def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("scales", ["auto", "row"])
@pytest.mark.parametrize(("lo", "hi", "sb"), [(-6, 6, 1.0),  # rows over 12 decades
                                              (20, 22, 1e-18), (-32, -30, 1e25),  # beyond fp16's range
                                              (0, 0, 0.0)])  # an all-zero operand (scale 1)
def test_fp16_parts_keep_fp32_accuracy_at_any_magnitude(lo: int, hi: int, sb: float, scales: str) -> None:
    # Each row (and K chunk, "auto" at these sizes) is scaled by a power of two into fp16's range
    # before its hi / lo split, and the products by the inverses; magnitudes far outside fp16's
    # range and rows 10^12 apart keep fp32-class accuracy (the float64 comparison judges it).
    src = WIDE.format(lo=lo, hi=hi, sb=sb)
    cand = prepared(gen(src), scales)
    assert "_gemm_3xf16_kernel" in cand and run_static_checks(cand) == []
    result = evaluate(src, cand, trials=2)
    assert result.correct, result.reason


@pytest.mark.parametrize(("a", "b"), [("64, 4096", "4096, 64"),  # one tile, long K: split K + reduce
                                      ("5, 300", "300, 40"),  # M <= 8: the CUDA-core kernel on C^T
                                      ("70, 48", "48, 50")])
def test_run_time_scalar_epilogue_on_each_gemm_path(a: str, b: str) -> None:
    """A shape-derived divisor (`/ math.sqrt(K)`) is a kernel argument of the fused epilogue on
    the plain, split-K and matrix-vector paths alike."""
    src = f'''
import math
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.matmul(a, b) / math.sqrt(a.shape[-1]) - 0.0001 * b.shape[0])
def get_inputs():
    return [torch.randn({a}), torch.randn({b})]
def get_init_inputs():
    return []
'''
    cand = check(src, expect="gemm-epilogue-fusion")
    fwd = forward_text(cand.source)
    assert "v_relu = _gemm_" in fwd  # the division and subtraction run in the GEMM's epilogue


def test_gemm_forwards_replay_as_a_graph() -> None:
    """A prepared GEMM issues five host launches before its kernel can start, so the GEMM templates
    ask for CUDA-graph replay of the whole forward; on CPU tensors the wrapper runs the plain
    forward, which is judged here."""
    src = src_of("torch.relu(a @ b + self.p)", "70, 48", "48, 50", n=50)
    cand = author_util.generate(src)  # every template (this file's author has the GEMM family only)
    assert "cuda-graph-replay" in used(cand) and "def _eager_forward(" in cand.source
    assert run_static_checks(cand.source) == []
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason
