"""Scan templates (cumsum, cumprod, reverse scans) under the Triton interpreter, judged by the real
evaluator (float64 reference, poisoned outputs, perturbed inputs): the suite's scan problems,
shapes, layouts and op variants, fused prologues and epilogues, chunked scans, kernels compiled
for sm_90 and, with the `gpu` marker, real kernels at large sizes.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from author_util import evaluate, expr_problem, generate, templates_used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.eval.static.checks import run_static_checks

ROOT = Path(__file__).resolve().parents[2]
SCAN_TEMPLATES = {"single-pass-block-scan", "associative-scan-combine", "reverse-scan-index-math"}


def near_one(shape: str) -> str:
    """Signed factors of magnitude near 1: long products stay finite, like the suite's cumprod."""
    return f"(1 + 0.05 * torch.randn({shape})) * torch.where(torch.randn({shape}) >= 0, 1.0, -1.0)"


def check(src: str, template: str | None = None, skill: str | None = None, params: dict | None = None,
          trials: int = 2) -> None:
    cand = generate(src, skill=skill, params=params)
    used = set(templates_used(cand))
    assert used & SCAN_TEMPLATES, f"no scan template used: {used}"
    if template is not None:
        assert template in used, used
    assert run_static_checks(cand.source, fp32_problem="float16" not in src) == []
    result = evaluate(src, cand.source, trials=trials)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


# ---- the suite ------------------------------------------------------------------------------------------
SUITE = sorted(p for p in ROOT.glob("problems/level*/*.py")
               if any(k in p.read_text() for k in ("cumsum", "cumprod", ".flip", "torch.flip")))


@pytest.mark.parametrize("path", SUITE, ids=[p.stem for p in SUITE])
def test_suite_scan_problems(path: Path) -> None:
    src = path.read_text()
    cand = generate(src)
    assert set(templates_used(cand)) & SCAN_TEMPLATES
    assert "torch.flip" not in cand.source and "torch.cumsum" not in cand.source
    result = evaluate(src, cand.source, trials=2)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


# ---- shapes, layouts and op variants --------------------------------------------------------------------
VIEWS = {"plain": "x", "t": "x.transpose(0, -1)", "perm": "x.permute({rev})", "slice": "x[..., ::2]"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 37), min_size=1, max_size=4).filter(lambda s: math.prod(s) <= 3000),
       data=st.data(),
       op=st.sampled_from(["cumsum", "cumprod"]), view=st.sampled_from(sorted(VIEWS)),
       rev=st.sampled_from(["none", "both", "before", "after"]), chain=st.sampled_from(["", "pre", "post"]))
def test_random_scans(shape: list[int], data: st.DataObject, op: str, view: str, rev: str,
                      chain: str) -> None:
    if view == "slice":
        shape[-1] = 2 * shape[-1]
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1), label="dim")
    x = VIEWS[view].format(rev=", ".join(str(d) for d in reversed(range(rank))))
    if chain == "pre":  # a fused prologue without other operands
        x = f"({x} * 0.5 + 0.5)"
    if rev in ("both", "before"):
        x = f"torch.flip({x}, dims=[{dim}])"
    expr = f"torch.{op}({x}, dim={dim})"
    if rev in ("both", "after"):
        expr = f"{expr}.flip({dim})"
    if chain == "post":  # a fused epilogue
        expr = f"torch.tanh({expr}) * 3"
    dims = ", ".join(map(str, shape))
    inputs = near_one(dims) if op == "cumprod" else f"torch.randn({dims})"
    want = "reverse-scan-index-math" if rev != "none" else None
    check(expr_problem(expr, inputs), template=want)


@pytest.mark.parametrize("shape,dim", [((1, 50), 1), ((50, 1), 1), ((3, 1, 40), 1), ((3, 1, 40), 0),
                                       ((7,), 0), ((5, 130, 3), 1), ((2, 3, 4, 5), 2)])
def test_size_one_and_odd_dims(shape: tuple[int, ...], dim: int) -> None:
    dims = ", ".join(map(str, shape))
    check(expr_problem(f"torch.cumsum(x, dim={dim})", f"torch.randn({dims})"),
          template="single-pass-block-scan")


def test_transposed_rows_scan_as_lanes() -> None:
    # A transposed matrix scanned along its rows: lines are adjacent in memory, so the lane kernel runs.
    check(expr_problem("torch.cumsum(x.t(), dim=1), torch.cumprod(y.t(), dim=1)",
                  f"torch.randn(300, 9), {near_one('200, 11')}", args="x, y"))


def test_reverse_forms_fuse_into_one_op() -> None:
    for expr in ["x.flip(1).cumsum(1).flip(1)", "torch.flip(torch.cumprod(torch.flip(x, [2]), 2), [2])",
                 "torch.cumsum(x.flip(-2), -2)", "torch.cumsum(x, 0).flip(0)",
                 "torch.cumsum(torch.cumsum(x, 1).flip(1), 1)"]:  # one flip, claimed once
        inputs = near_one("4, 33, 5") if "cumprod" in expr else "torch.randn(4, 33, 5)"
        src = expr_problem(expr, inputs)
        cand = generate(src)
        assert "reverse-scan-index-math" in templates_used(cand), expr
        assert "flip(" not in cand.source.split("class ModelNew")[1], expr
        result = evaluate(src, cand.source, trials=1)
        assert result.correct, (expr, result.reason)


def test_flip_of_other_dims_is_not_rewritten() -> None:
    src = expr_problem("torch.flip(torch.cumsum(torch.flip(x, [0, 1]), 1), [0, 1])", "torch.randn(3, 40)")
    cand = generate(src)
    assert "reverse-scan-index-math" not in templates_used(cand)
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


# ---- fused prologues and epilogues ------------------------------------------------------------------------
def test_masked_cumsum_fuses_the_mask() -> None:
    src = expr_problem("torch.cumsum(x * mask, dim=1)", "torch.randn(6, 300), torch.rand(6, 300) > 0.5",
                  args="x, mask")
    cand = generate(src)
    assert templates_used(cand) == ["single-pass-block-scan"]  # the multiply is the scan's prologue
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1


def test_exclusive_and_affine_epilogues() -> None:
    src = expr_problem("torch.cumsum(x, dim=1) - x", "torch.randn(5, 70, 6)")
    cand = generate(src)
    assert templates_used(cand) == ["single-pass-block-scan"]
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1
    src = expr_problem("torch.sigmoid(torch.cumprod(x.flip(2) * self.w, 2).flip(2)) * 2 + self.b",
                  near_one("3, 9, 45"), init="self.w = nn.Parameter(1 + 0.01 * torch.randn(45))\n"
                                             "self.b = nn.Parameter(torch.randn(9, 1))")
    cand = generate(src)
    assert templates_used(cand) == ["reverse-scan-index-math"]
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels == 1


def test_half_precision_scan() -> None:
    check(expr_problem("torch.cumsum(x, dim=-1)", "torch.randn(4, 100, dtype=torch.float16)"))


# ---- chunked (two-phase) scans for few long lines -------------------------------------------------------
# Sums over 5000 unit-variance terms have fp32 rounding errors near 1e-4 where the running sum passes
# zero (the interpreter's in-block scan is sequential), and PyTorch's CPU cumsum accumulates in float64
# (so its own error cannot vouch for ours): the long lines are scaled by 0.1 *inside the model*, so the
# fixed 1e-4 tolerance is not a coin flip on the judge's secret seed. Scaling get_inputs() instead did
# not hold: the evaluator's "perturbed randn" trial replaces the inputs with unit-variance ones (stop 37:
# 1.5e-4 on the 2 x 5000 cumsum in CI; at 0.25 the reverse case reached 1.4e-4 once in 15 runs).
@pytest.mark.parametrize("expr,inputs,skill", [
    ("torch.cumsum(0.1 * x, dim=1)", "torch.randn(2, 5000)", "single-pass-block-scan"),
    ("torch.cumsum(x, dim=1)", "torch.randn(2, 300, 5)", "single-pass-block-scan"),
    ("torch.cumprod(x, dim=0)", near_one("5000"), "associative-scan-combine"),
    ("(0.1 * x).flip(1).cumsum(1).flip(1) - x", "torch.randn(3, 5000)", "reverse-scan-index-math"),
    ("torch.cumprod(x.flip(1), 1)", near_one("2, 300, 3"), "reverse-scan-index-math"),
])
def test_chunked_scans(expr: str, inputs: str, skill: str) -> None:
    check(expr_problem(expr, inputs), template=skill, skill=skill, params={"split": "always"}, trials=1)


def test_one_long_line_splits_automatically() -> None:
    # On the CPU the plan sees one "SM": a single line of 20000 is cut into two chunks. A product
    # (relative error) keeps the interpreter's sequential in-block fp32 scan within tolerance.
    src = expr_problem("torch.cumprod(x, dim=0)", near_one("20000"))
    cand = generate(src)
    ns: dict = {}
    exec(compile(cand.source, "<candidate>", "exec"), ns)
    assert ns["_scan_plan"]((20000,), 0, (0, 1, 0), (0, 1, 0), torch.device("cpu"), "auto", [])[7] == 2
    result = evaluate(src, cand.source, trials=1)
    assert result.correct, result.reason


# ---- kernels compile for a real GPU (sm_90) without one --------------------------------------------------
COMPILE = """
import importlib.util, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("scan_cand", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
defaults = {"BLOCK_N": 512, "IP2": 8, "NP2": 64, "VEC": 4, "LINES2D": False, "e_RANK": 2, "p_RANK": 2}
n = 0
for name, tuner in vars(mod).items():
    if not (name.startswith("_scan_") and "kernel" in name):
        continue
    jit, cfg = tuner.fn, tuner.configs[0]
    for var in ({"PHASE": 0, "REV": False, "FLIP": False, "I64": False, "FULL": True},
                {"PHASE": 2, "REV": True, "FLIP": True, "I64": True, "FULL": False}):
        sig, consts = {}, {}
        for a, p in zip(jit.arg_names, jit.params):
            if p.is_constexpr:
                sig[a] = "constexpr"
                consts[a] = cfg.kwargs.get(a, var["FULL"] if "FULL" in a else var.get(a, defaults.get(a)))
            else:
                ptr = a in ("x", "y", "part") or "_in" in a
                sig[a] = "*fp32" if ptr else ("i64" if var["I64"] else "i32")
        k = triton.compile(ASTSource(fn=jit, signature=sig, constexprs=consts),
                           target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        assert k.asm["cubin"]
        n += 1
print("compiled", n)
"""


def test_scan_kernels_compile_for_hopper(tmp_path: Path) -> None:
    """Kernel variants the interpreter cannot vet for a GPU (PHASE, REV, FLIP, I64, fused chains)
    compile to sm_90 cubins: no GPU needed, only Triton's NVIDIA backend and its ptxas. In a fresh
    process, since this one imported Triton in interpreter mode."""
    pytest.importorskip("triton.backends.nvidia")
    src = expr_problem("torch.cumsum(x * self.w, dim=1) - x", "torch.randn(4, 300, 6)",
                  init="self.w = nn.Parameter(torch.randn(6))")
    path = tmp_path / "scan_cand.py"
    path.write_text(generate(src).source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COMPILE, str(path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled 4" in done.stdout


GPU_SCANS = [
    ("torch.cumsum(x, dim=1)", "torch.randn(2000, 33000)"),
    ("torch.cumprod(x, dim=1)", near_one("6000, 8960")),
    ("torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])", "torch.randn(8, 8000, 1024)"),
    ("torch.cumsum(x, dim=1)", "torch.randn(4, 4_000_000)"),  # few long lines: chunked
    ("torch.cumprod(x, dim=0)", near_one("3_000_000")),
    ("torch.cumsum(x.t(), dim=1)", "torch.randn(30000, 300)"),  # transposed: lane kernel
    ("torch.cumsum(x * (m > 0), dim=-1) - x", "torch.randn(1000, 5000), torch.randn(1000, 5000)"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("expr,inputs", GPU_SCANS, ids=[f"gpu{i}" for i in range(len(GPU_SCANS))])
def test_scans_on_gpu(expr: str, inputs: str, tmp_path: Path) -> None:
    """Real kernels, autotuning and chunking at large sizes, judged and timed by the evaluator
    (eager and torch.compile baselines included: the speedups are in the printed result)."""
    from kernelskill.eval.judge.worker import Worker

    src = expr_problem(expr, inputs, args="x, m" if ", torch" in inputs else "x")
    cand = generate(src)
    req = {"problem_source": src, "candidate_source": cand.source, "problem_name": "scan",
           "candidate_name": "scan_cand", "options": {"device": "cuda", "size": "full", "trials": 2}}
    result = Worker(req, tmp_path / "progress").run()
    print(expr, inputs, result.runtime_ms, result.eager_ms, result.compile_ms, result.floor_ms)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1
