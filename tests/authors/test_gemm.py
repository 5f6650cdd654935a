"""The GEMM templates under the interpreter: linear / matmul / bmm with fused epilogues, the
precision policies, every variant (split-K, matrix-vector kernels, triangular and symmetric
rewrites, diagonal scaling, reassociation, tile spaces), odd and size-1 shapes, strided views, and
the problem suite's GEMM problems. Prepared operands: test_gemm_prepared.py."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import author_util
import pytest
from author_util import evaluate
from gemm_util import EPILOGUES, ROOT, check, gen, prepared, src_of, used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.eval.static.checks import run_static_checks

# ---- the default template: linear / matmul / bmm + epilogues -------------------------------------

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
    ("torch.matmul(a, b)", "2, 1, 9, 33", "3, 33, 17"),  # broadcast batch dims
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
    # M = 40: three 16-row programs on the CPU config, the last masked; K = 170: a masked second K step
    ("gemv-bandwidth-kernel", "torch.matmul(a, b)", "40, 170", "170, 1", "1", 1),
    ("gemv-bandwidth-kernel", "torch.matmul(a.t(), v) + 1.0", "170, 61", "1", "170", 1),
    ("gemv-bandwidth-kernel", "torch.tanh(self.lin(a)) - v", "3, 8", "1", "8", 1),
    ("gemv-bandwidth-kernel", "v @ b", "1", "70, 50", "70", 1),
    ("gemv-bandwidth-kernel", "a @ b", "2, 40, 50", "50, 37", "1", 1),  # large shapes: tensor cores
    ("gemm-tile-shapes", "a @ b", "70, 40", "40, 70", "1", 1),
    ("gemm-grouped-tile-order", "torch.matmul(a, b) + v", "2, 1, 20, 40", "3, 40, 30", "30", 1),
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
