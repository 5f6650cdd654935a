"""Prepared GEMM operands (runtime/gemm_prep.py) under the interpreter: K-major TF32 hi / lo
copies and three TF32 dots per step, one-side preparation for small M or N, fp16 parts scaled by
powers of two, and run-time scalars in the epilogue of each GEMM path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from author_util import evaluate, forward_text
from gemm_util import EPILOGUES, at_threshold, check, gen, prepared, src_of, used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.authors.builtin.runtime.gemm_prep import _GEMM_PREP_MIN as PREP_MIN
from kernelskill.eval.api import evaluate as evaluate_api
from kernelskill.eval.static.checks import run_static_checks
from kernelskill.eval.types import EvalOptions

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
