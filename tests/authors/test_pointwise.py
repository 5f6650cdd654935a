"""The fused elementwise template under the interpreter: broadcasts, strided views, odd sizes."""

from __future__ import annotations

import pytest
from author_util import evaluate, forward_text, generate, templates_used
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CHAIN = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
A = {a}
B = {b}
C = {c}
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn({bias_shape}))
    def forward(self, x, y):
        x = {view}
        h = F.gelu(x) * 0.5 + self.bias
        h = torch.clamp(h, -0.7, 0.9) - y
        return torch.sigmoid(h) * F.silu(h), h
def get_inputs():
    return [torch.randn(A, B, C), torch.randn({y_shape})]
def get_init_inputs():
    return []
'''


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.integers(1, 5), b=st.integers(1, 37), c=st.integers(1, 67),
       bias=st.sampled_from(["c", "b1", "scalar"]), y=st.sampled_from(["full", "row", "col"]),
       transpose=st.booleans())
def test_chain_with_broadcasts_and_views(a: int, b: int, c: int, bias: str, y: str, transpose: bool) -> None:
    last = b if transpose else c
    mid = c if transpose else b
    bias_shape = {"c": f"({last},)", "b1": f"({mid}, 1)", "scalar": "()"}[bias]
    y_shape = {"full": f"A, {'C, B' if transpose else 'B, C'}", "row": f"{last}",
               "col": f"A, {mid}, 1"}[y]
    src = CHAIN.format(a=a, b=b, c=c, bias_shape=bias_shape, y_shape=y_shape,
                       view="x.transpose(1, 2)" if transpose else "x")
    cand = generate(src)
    assert "fuse-elementwise-chain" in templates_used(cand)
    result = evaluate(src, cand.source)
    assert result.correct, result.reason
    assert result.custom_kernels >= 1


@pytest.mark.parametrize("act", ["F.relu(x)", "F.leaky_relu(x, 0.2)", "F.elu(x, 0.7)",
                                 "F.softplus(x, 2.0, 5.0)", "F.mish(x)", "F.hardswish(x)",
                                 "F.hardsigmoid(x)", "torch.tanh(x)",
                                 "F.gelu(x, approximate='tanh')", "F.selu(x)", "torch.pow(x, 3)",
                                 "x ** 2", "torch.abs(x) ** 0.5", "F.relu6(x * 4)", "F.logsigmoid(x)",
                                 "torch.where(x > 0.1, x, -x * 0.5)", "torch.rsqrt(x * x + 1)"])
def test_each_activation_matches_pytorch(act: str) -> None:
    src = CHAIN.replace("h = F.gelu(x) * 0.5 + self.bias", f"h = ({act}) * 0.5 + self.bias").format(
        a=2, b=5, c=33, bias_shape="(33,)", y_shape="33", view="x")
    cand = generate(src)
    result = evaluate(src, cand.source)
    assert result.correct, result.reason


RUNTIME_SCALARS = '''
import math
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, y, a, b):
        n = x.shape[-1]
        z = torch.relu(x) * 2.0 / math.sqrt(n)       # a scalar of an input's shape, mid-chain
        s = z.shape[0]                                # a shape of a value the chain makes
        w = z * s - y
        scores = torch.matmul(a, b.transpose(-2, -1)) / math.sqrt(a.shape[-1])
        return w, torch.softmax(scores, dim=-1), torch.softmax(x / math.sqrt(n), dim=-1)
def get_inputs():
    return [torch.randn(5, 33), torch.randn(5, 33), torch.randn(2, 3, 17, 8), torch.randn(2, 3, 19, 8)]
def get_init_inputs():
    return []
'''


def test_run_time_scalars_are_kernel_arguments() -> None:
    """Python numbers computed in forward (from shapes) enter fused chains as kernel arguments:
    the elementwise chain and the GEMM epilogue take them; the shape ops run ahead of the GEMM so
    its epilogue can fuse the division; a scalar of a value made inside a chain still works; a
    template without run-time scalars (softmax's prologue) leaves the division to another kernel."""
    cand = generate(RUNTIME_SCALARS)
    fwd = forward_text(cand.source)
    assert {"fuse-elementwise-chain", "gemm-epilogue-fusion"} <= set(templates_used(cand))
    assert " / " not in fwd.split("_gemm_")[1].split("\n")[0]  # the GEMM line takes the scalar
    assert fwd.index("math.sqrt(v_getitem") < fwd.index("_gemm_")
    result = evaluate(RUNTIME_SCALARS, cand.source, trials=2)
    assert result.correct, result.reason


SIBLINGS = '''
import torch
import torch.nn as nn
SMALL = {{}}
class Model(nn.Module):
    def forward(self, x, c):
        i, f, g, o = x.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c){tail}
        return h, c
def get_inputs():
    return [torch.randn(5, 44), torch.randn(5, 11)]
def get_init_inputs():
    return []
'''


def test_adjacent_sibling_chains_fuse_into_one_kernel() -> None:
    """An LSTM cell's gates: four chains, each starting from its own slice of the gate tensor,
    one kernel with both outputs (c is needed outside, h is returned)."""
    src = SIBLINGS.format(tail="")
    cand = generate(src)
    assert forward_text(cand.source).count("_pointwise_") == 1
    r = evaluate(src, cand.source)
    assert r.correct, r.reason
    assert r.custom_kernels == 1


def test_chains_of_different_shapes_stay_apart() -> None:
    src = SIBLINGS.format(tail="\n        s = torch.relu(x[:, :3]) * 2.0\n        h = h[:, :3] + s")
    cand = generate(src)
    r = evaluate(src, cand.source)
    assert r.correct, r.reason
    assert r.custom_kernels >= 2


# op -> (forward expression, the inputs' range as (log10 low, log10 high, signs)): where each
# output is tiny, and a 1e-7 absolute error a large relative one.
_NEAR_ZERO = {
    "tanh": ("torch.tanh(x)", (-9, 1, (1, -1))),
    "log1p": ("torch.log1p(x)", (-9, -0.3, (1, -1))),  # log1p's domain: x > -1
    "expm1": ("torch.expm1(x)", (-9, 1, (1, -1))),
    "softplus": ("torch.nn.functional.softplus(x)", (0.5, 1.3, (-1,))),  # x in [-20, -3]
    "logsigmoid": ("torch.nn.functional.logsigmoid(x)", (0.5, 1.3, (1,))),  # x in [3, 20]
    "LogSigmoid": ("self.act(x)", (0.5, 1.3, (1,))),  # the module form (_INIT)
    "elu": ("torch.nn.functional.elu(x, alpha=0.7)", (-9, 0, (1, -1))),  # expm1 on the negative side
    "celu": ("torch.nn.functional.celu(x, alpha=1.5)", (-9, 0, (1, -1))),
    "selu": ("torch.nn.functional.selu(x)", (-9, 0, (1, -1))),
}

# op -> (__init__ lines, the reference's expression) where the forward calls a module.
_INIT = {"LogSigmoid": ("self.act = nn.LogSigmoid()", "torch.nn.functional.logsigmoid(x)")}


@pytest.mark.parametrize("op", sorted(_NEAR_ZERO))
def test_functions_keep_relative_precision_near_zero(op: str, tmp_path) -> None:  # noqa: ANN001
    """The kernel forms of functions that vanish at 0 (or, as softplus and logsigmoid, in a tail)
    are accurate relative to their output, not only absolutely: there the output is tiny, and a
    tolerance in proportion to it (the `default` policy on a small output) is one a 1e-7 absolute
    error fails (a 1-element transposed convolution with a tanh tail did, in CI)."""
    import importlib.util

    import torch
    from author_util import expr_problem

    expr, (low, high, signs) = _NEAR_ZERO[op]
    init, ref = _INIT.get(op, ("", expr))
    src = expr_problem(expr, "torch.randn(4, 64)", init=init)
    path = tmp_path / "cand.py"
    path.write_text(generate(src).source)
    spec = importlib.util.spec_from_file_location("cand", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mag = torch.logspace(low, high, 256 // len(signs))
    x = torch.cat([s * mag for s in signs]).reshape(4, 64)
    got = mod.ModelNew()(x).double()
    assert "_pointwise" in path.read_text()  # the kernel's form, not PyTorch's
    want = eval(ref, {"torch": torch, "x": x.double()})  # noqa: S307 (the table's own text)
    assert torch.all((got - want).abs() <= 1e-5 * want.abs() + 1e-30), (got - want).abs().max()
