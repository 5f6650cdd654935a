"""In-place elementwise methods become functional only where no alias can see the difference."""

from __future__ import annotations

import torch
import torch.fx
import torch.nn as nn
from kernelskill.authors.builtin.frontend.capture import capture
from kernelskill.authors.builtin.frontend.functionalize import functionalize


def _traced(fn) -> torch.fx.GraphModule:  # noqa: ANN001
    class M(nn.Module):
        def forward(self, x):  # noqa: ANN001, ANN202
            return fn(x)
    return torch.fx.symbolic_trace(M())


def _methods(gm: torch.fx.GraphModule) -> list[str]:
    return [n.target for n in gm.graph.nodes if n.op == "call_method"]


def test_a_fresh_intermediate_is_updated_functionally_and_later_reads_follow() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = x * 2.0
        early = y + 1.0
        y.relu_()
        y.mul_(3.0)
        return early, y
    gm = _traced(f)
    x = torch.randn(4, 5)
    want = f(x.clone())
    assert functionalize(gm) == 2 and _methods(gm) == ["relu", "mul"]
    got = gm(x.clone())
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


def test_inputs_and_aliased_intermediates_stay_in_place() -> None:
    def on_input(x):  # noqa: ANN001, ANN202
        x.relu_()
        return x * 2.0

    def through_view(x):  # noqa: ANN001, ANN202
        y = x * 2.0
        flat = y.view(-1)
        y.relu_()
        return flat

    for f in (on_input, through_view):
        gm = _traced(f)
        assert functionalize(gm) == 0 and "relu_" in _methods(gm)


PROMOTING = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, z):
        y = x * 2.0
        y.add_(z)
        return y
def get_inputs():
    return [torch.randn(3, 4), torch.randn(3, 4).double()]
def get_init_inputs():
    return []
"""


def test_an_update_that_would_promote_its_target_keeps_the_traced_graph() -> None:
    # y.add_(z) keeps y float32; add(y, z) would be float64: lowering refuses the rewrite.
    program = capture(PROMOTING).program
    assert any(op.kind == "torch" and ".add_(" in op.torch_expr for op in program.ops)
    assert program.outputs.meta.dtype == torch.float32
