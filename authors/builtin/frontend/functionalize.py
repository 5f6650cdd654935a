"""In-place elementwise methods on fresh intermediates, made functional so they can fuse.

`y = self.fc(x); y.relu_(); y.mul_(2.0)` traces as in-place method calls on `y`; lowered as they
are, each is an opaque PyTorch statement that ends every fused chain. When `y` is a fresh tensor
(made by a computing op, not a view, an input, a parameter or anything that may alias one) and
nothing reads it through an alias, `y.relu_()` equals `y2 = y.relu()` with every later read of `y`
reading `y2`: the graph is rewritten that way, and the chain fuses into the GEMM's epilogue.

Anything not provably safe is left in place (and still correct as PyTorch). The lowering checks
each rewritten node keeps its input's dtype and shape (in-place ops cannot promote or broadcast
their target) and otherwise lowers the original graph (`FUNCTIONALIZED`).
"""

from __future__ import annotations

import operator

import torch.fx
import torch.nn as nn

from .kinds import _UNARY

FUNCTIONALIZED = "kernelskill_functionalized"
"""node.meta key: this node was an in-place method call."""

# In-place methods whose functional form is the same elementwise op on the same target.
_INPLACE = {f"{name}_" for name in [*_UNARY, "add", "sub", "mul", "div", "clamp", "clamp_min",
                                    "clamp_max", "pow", "sigmoid", "tanh"]}
# Calls whose result is a new tensor and that never return an alias of an argument.
_FRESH_FUNCTIONS = {"relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "sin", "cos",
                    "erf", "add", "sub", "mul", "div", "matmul", "mm", "bmm", "linear", "softmax",
                    "log_softmax", "gelu", "silu", "layer_norm", "clamp", "pow", "square", "sum", "mean"}
_FRESH_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.matmul,
                    operator.neg, operator.pow}
_FRESH_MODULES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                  nn.ConvTranspose3d, nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm,
                  nn.Bilinear, nn.Embedding)


def _computes_fresh(node: torch.fx.Node, gm: torch.fx.GraphModule) -> bool:
    """Does `node` always return a tensor no other value aliases?"""
    if node.meta.get(FUNCTIONALIZED):
        return True
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), _FRESH_MODULES)
    if node.op == "call_function" and node.target in _FRESH_OPERATORS:
        return True
    name = getattr(node.target, "__name__", node.target) if node.op == "call_function" else node.target
    return node.op in ("call_function", "call_method") and name in _FRESH_FUNCTIONS


def _reads_only(user: torch.fx.Node, gm: torch.fx.GraphModule) -> bool:
    """Does `user` read its inputs without keeping an alias (or writing through one)?"""
    if user.op == "output":
        return True
    if user.op == "call_method" and user.target in _INPLACE:
        return True  # rewritten in turn, or checked when reached
    return _computes_fresh(user, gm)


def functionalize(gm: torch.fx.GraphModule) -> int:
    """Rewrite safe in-place elementwise method calls in `gm`'s graph; returns how many."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    done = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_method" or node.target not in _INPLACE or not node.args:
            continue
        target = node.args[0]
        if not isinstance(target, torch.fx.Node) or not _computes_fresh(target, gm):
            continue
        if not all(_reads_only(u, gm) for u in target.users):
            continue
        node.target = node.target[:-1]
        node.meta[FUNCTIONALIZED] = True
        for user in list(target.users):
            if user is not node and order[user] > order[node]:
                user.replace_input_with(target, node)
        done += 1
    if done:
        gm.recompile()
    return done
