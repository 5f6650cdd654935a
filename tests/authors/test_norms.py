"""Normalization templates (fused-layer-rms-norm, two-level-norm-statistics) under the interpreter:
every op kind and attribute variant, each kernel path (rows in registers, strided columns,
two-level statistics), odd sizes, offset inputs, views, fused prologues / epilogues, BatchNorm
running statistics, hand-written norms, and the suite's norm problems."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from author_util import evaluate, generate, templates_used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernelskill.eval.harness import seeded
from kernelskill.eval.problem import load_candidate, load_problem

ROWS_T, STATS_T = "fused-layer-rms-norm", "two-level-norm-statistics"

PROBLEM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, {args}):
{body}
def get_inputs():
    return [{inputs}]
def get_init_inputs():
    return []
'''


def make(init: str, body: str, inputs: str, args: str = "x") -> str:
    ind = lambda s, n: "\n".join(" " * n + ln for ln in s.strip("\n").split("\n"))  # noqa: E731
    return PROBLEM.format(init=ind(init or "pass", 8), body=ind(body, 8), inputs=inputs, args=args)


def assert_correct(result) -> None:  # noqa: ANN001
    assert result.correct, result.reason


def check(src: str, template: str, launched: str | None = None) -> str:
    """Generate, evaluate, and (with `launched`) assert which shared norm kernel actually ran."""
    cand = generate(src)
    assert template in templates_used(cand), cand.source
    result = evaluate(src, cand.source)
    assert_correct(result)
    assert result.custom_kernels >= 1
    if launched is not None:
        assert launched in result.kernel_names, result.kernel_names
    return cand.source


AFFINE = {"affine": "", "plain": ", elementwise_affine=False", "no_bias": ", bias=False"}
RANDOMIZE = "if self.n.weight is not None:\n    nn.init.normal_(self.n.weight, 1.0, 0.2)\n" \
            "if getattr(self.n, 'bias', None) is not None:\n    nn.init.normal_(self.n.bias, 0.0, 0.2)"


# ---- layer norm / RMS norm / normalize --------------------------------------------------------

@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.integers(1, 4), b=st.integers(1, 9), c=st.integers(1, 300), two_dims=st.booleans(),
       affine=st.sampled_from(list(AFFINE)), offset=st.booleans(), transposed=st.booleans())
def test_layer_norm_random_shapes(a: int, b: int, c: int, two_dims: bool, affine: str, offset: bool,
                                  transposed: bool) -> None:
    shape = (b, c) if two_dims else (c,)
    x = "x.transpose(1, 2)" if transposed else "x"
    src = make(f"self.n = nn.LayerNorm({shape!r}, eps=1e-5{AFFINE[affine]})\n{RANDOMIZE}",
               f"return self.n({x})", f"torch.randn({a}, {c if transposed else b}, {b if transposed else c})"
               + (" * 3 + 5" if offset else ""))
    check(src, ROWS_T)


@pytest.mark.parametrize("rows,cols,kernel", [(3, 2500, "row"), (2, 17000, "stats"), (140, 33, "row")],
                         ids=["few-rows", "long-rows-two-level", "packed-short-rows"])
def test_layer_norm_paths(rows: int, cols: int, kernel: str) -> None:
    src = make(f"self.n = nn.LayerNorm({cols})\n{RANDOMIZE}", "return self.n(x)",
               f"torch.randn({rows}, {cols}) * 2 + 7")
    check(src, ROWS_T, f"_nrm_{kernel}_kernel")


def test_layer_norm_of_transposed_view_reads_columns() -> None:
    src = make(f"self.n = nn.LayerNorm(12)\n{RANDOMIZE}", "return self.n(x.transpose(1, 2)).transpose(1, 2)",
               "torch.randn(2, 12, 37) + 3")
    check(src, ROWS_T, "_nrm_col_kernel")


@pytest.mark.parametrize("body,init", [
    ("return self.n(x)", "self.n = nn.RMSNorm(40)\nnn.init.normal_(self.n.weight, 1.0, 0.2)"),
    ("return self.n(x)", "self.n = nn.RMSNorm((5, 40), eps=1e-6, elementwise_affine=False)"),
    ("return F.rms_norm(x, (40,), self.w, 1e-5)", "self.w = nn.Parameter(torch.rand(40) + 0.5)"),
    ("return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * self.w",
     "self.w = nn.Parameter(torch.rand(40) + 0.5)"),
    ("return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)", ""),
], ids=["module", "module-2d-no-affine", "functional", "hand-written", "hand-written-middle-dim"])
def test_rms_norm_variants(body: str, init: str) -> None:
    src = make(init, body, "torch.randn(3, 5, 40) * 2 + 1")
    source = check(src, ROWS_T)
    assert "fuse-elementwise-chain" not in source  # the weight multiply fused as the epilogue


@pytest.mark.parametrize("expr", ["F.normalize(x, dim=-1)", "F.normalize(x, p=2.0, dim=1, eps=1e-12)",
                                  "F.normalize(x, p=1, dim=0)", "F.normalize(x.transpose(1, 2), dim=2)",
                                  "x / x.norm(p=2, dim=1, keepdim=True)"])
def test_normalize_variants(expr: str) -> None:
    check(make("", f"return {expr}", "torch.randn(4, 33, 19)"), ROWS_T)


def test_layer_norm_fuses_prologue_and_epilogue() -> None:
    src = make(f"self.n = nn.LayerNorm(70)\n{RANDOMIZE}\nself.s = nn.Parameter(torch.rand(70))",
               "h = self.n(x * 0.5 + y)\nreturn F.gelu(h) * self.s + x",
               "torch.randn(6, 70) + 4, torch.randn(70)", args="x, y")
    cand = generate(src)
    assert templates_used(cand) == [ROWS_T]
    assert cand.source.count("_nrm_row_kernel_") >= 1  # region-specific kernels: chains fused in
    result = evaluate(src, cand.source)
    assert_correct(result)


# ---- group / instance / batch norm -------------------------------------------------------------

@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 3), g=st.integers(1, 4), cpg=st.integers(1, 3), h=st.integers(2, 13),
       w=st.integers(1, 11), kind=st.sampled_from(["group", "instance", "instance-plain"]),
       offset=st.booleans())
def test_group_and_instance_norm_random_shapes(n: int, g: int, cpg: int, h: int, w: int, kind: str,
                                               offset: bool) -> None:
    c = g * cpg
    mod = {"group": f"nn.GroupNorm({g}, {c})", "instance": f"nn.InstanceNorm2d({c}, affine=True)",
           "instance-plain": f"nn.InstanceNorm2d({c})"}[kind]
    init = f"self.n = {mod}\n" + (RANDOMIZE if kind != "instance-plain" else "")
    src = make(init, "return self.n(x)", f"torch.randn({n}, {c}, {h}, {w})" + (" * 3 + 5" if offset else ""))
    check(src, STATS_T)


@pytest.mark.parametrize("mod,shape,kernel", [
    ("nn.GroupNorm(2, 4)", "2, 4, 97, 89", "stats"),  # groups of 17266 elements: two-level
    ("nn.GroupNorm(3, 6, affine=False)", "2, 6, 7", "row"),
    ("nn.InstanceNorm1d(5, affine=True)", "3, 5, 17", "row"),
    ("nn.InstanceNorm3d(2, affine=True)", "1, 2, 26, 26, 26", "stats"),  # 17576 per instance
    ("nn.InstanceNorm3d(3, affine=True)", "2, 3, 13, 14, 15", "row"),
])
def test_group_and_instance_norm_paths(mod: str, shape: str, kernel: str) -> None:
    check(make(f"self.n = {mod}\n" + (RANDOMIZE if "False" not in mod else ""), "return self.n(x)",
               f"torch.randn({shape}) * 2 - 3"), STATS_T, f"_nrm_{kernel}_kernel")


BN_CASES = {
    "bn1d": ("nn.BatchNorm1d(24)", "37, 24"),
    "bn1d-seq": ("nn.BatchNorm1d(6, momentum=None)", "5, 6, 19"),
    "bn2d": ("nn.BatchNorm2d(5)", "3, 5, 11, 13"),
    "bn3d-plain": ("nn.BatchNorm3d(4, affine=False)", "2, 4, 3, 5, 7"),
    "bn2d-no-running": ("nn.BatchNorm2d(3, track_running_stats=False)", "4, 3, 6, 9"),
    "bn2d-eval": ("nn.BatchNorm2d(5)", "3, 5, 11, 13"),
}


def _bn_src(case: str, epilogue: str = "y") -> str:
    mod, shape = BN_CASES[case]
    init = f"self.n = {mod}\n" + (RANDOMIZE if "affine=False" not in mod else "")
    if case.endswith("eval"):
        init += ("\nself.n.running_mean.uniform_(-1, 1)\nself.n.running_var.uniform_(0.5, 2)"
                 "\nself.n.eval()")
    return make(init, f"y = self.n(x)\nreturn {epilogue}", f"torch.randn({shape}) * 3 + 5")


@pytest.mark.parametrize("case", list(BN_CASES))
def test_batch_norm_variants(case: str) -> None:
    check(_bn_src(case, "torch.relu(y) * 2.0"), STATS_T)


@pytest.mark.parametrize("case", ["bn2d", "bn1d-seq"])
def test_batch_norm_updates_running_statistics(case: str) -> None:
    src = _bn_src(case)
    cand = generate(src)
    assert STATS_T in templates_used(cand)
    prob = load_problem(src, "small")
    seeded(0)
    ref = prob.model_cls()
    seeded(0)
    new = load_candidate(cand.source).ModelNew()
    with torch.no_grad():
        for seed in (1, 2):
            seeded(seed)
            x = prob.get_inputs()[0]
            torch.testing.assert_close(new(x), ref(x), atol=1e-4, rtol=1e-4)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(new.n, name), getattr(ref.n, name), atol=1e-5, rtol=1e-5)


def test_group_norm_fuses_prologue_and_epilogue() -> None:
    src = make(f"self.n = nn.GroupNorm(2, 6)\n{RANDOMIZE}", "return F.silu(self.n(torch.relu(x) - 0.5)) + x",
               "torch.randn(2, 6, 5, 7) + 1")
    cand = generate(src)
    assert templates_used(cand) == [STATS_T]
    assert_correct(evaluate(src, cand.source))


def test_unsupported_variants_stay_in_pytorch() -> None:
    cand = generate(make("", "return F.normalize(x, p=3.0, dim=1)", "torch.randn(4, 9)"))
    assert ROWS_T not in templates_used(cand)


# ---- the suite's normalization problems ----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2] / "problems"
SUITE = ["level1/16_layernorm_last_dim.py", "level1/17_rmsnorm.py", "level1/18_groupnorm.py",
         "level1/19_batchnorm2d.py", "level1/20_instancenorm2d.py", "level1/21_l2norm_channels.py",
         "level2/02_conv2d_batchnorm_relu.py", "level2/04_linear_layernorm_residual.py",
         "level2/09_convtranspose2d_instancenorm_relu.py", "level2/10_linear_batchnorm1d_gelu.py",
         "level2/16_linear_groupnorm_hardtanh.py", "level2/18_conv3d_instancenorm_leakyrelu.py",
         "level2/19_conv1d_gelu_layernorm.py", "level2/22_convtranspose3d_batchnorm_relu.py",
         "level2/23_linear_l2norm_scale.py", "level2/24_conv2d_strided_batchnorm_mish.py",
         "level3/03_resnet_bottleneck_block.py", "level3/06_transformer_encoder_block.py"]


@pytest.mark.parametrize("path", SUITE)
def test_suite_norm_problems(path: str) -> None:
    src = (ROOT / path).read_text()
    cand = generate(src)
    assert {ROWS_T, STATS_T} & set(templates_used(cand)), path
    result = evaluate(src, cand.source)
    assert_correct(result)
    assert result.custom_kernels >= 1
