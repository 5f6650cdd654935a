"""FLOPs of elementwise, reduction and normalization ops, for the FLOP count of a forward.

PyTorch's FlopCounterMode counts matmuls, convolutions and attention only: a softmax counted 0.
Here an op costs a fixed number of FLOPs per element of its largest tensor (an output for a map,
the input for a reduction): one per arithmetic step of its textbook formula, a transcendental
(exp, log, erf, tanh) counting one. Softmax is max, subtract, exp, sum and divide: 5 per element.
Rationale: these counts describe the work, not the instruction mix; at a few FLOPs per element
they stay an order below what the same elements cost in bytes (5 FLOPs against 8 bytes per fp32
element is ~0.1 ps against ~1.7 ps on an H200), so the floor of memory-bound problems is still
their bytes, and a forward's FLOPs are no longer reported as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

_COSTS: dict[int, tuple[str, ...]] = {
    1: ("add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "exp", "exp2", "expm1", "log", "log2",
        "log1p", "sqrt", "rsqrt", "reciprocal", "tanh", "sin", "cos", "erf", "pow", "maximum", "minimum",
        "clamp_min", "clamp_max", "where", "sign", "threshold", "gt", "lt", "ge", "le", "eq", "ne",
        "sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "cumsum", "cumprod",
        "nll_loss_forward"),
    2: ("clamp", "hardtanh", "leaky_relu", "addcmul", "addcdiv", "linalg_vector_norm"),
    3: ("softplus", "hardsigmoid", "lerp", "mse_loss", "l1_loss"),
    4: ("sigmoid", "elu", "hardswish", "var", "std", "var_mean", "std_mean",
        "_native_batch_norm_legit_no_training"),
    5: ("silu", "gelu", "selu", "_softmax", "_log_softmax", "smooth_l1_loss", "huber_loss"),
    6: ("binary_cross_entropy",),
    7: ("mish",),
    # mean, subtract, square, sum, scale, add eps and rsqrt (per row), multiply, affine
    8: ("native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional"),
}


def _numel(x: Any) -> int:
    """Elements of a shape (FlopCounterMode hands shapes), or of the largest in a tuple of them."""
    if isinstance(x, torch.Size) or (isinstance(x, (list, tuple)) and all(isinstance(d, int) for d in x)):
        return math.prod(x)
    if isinstance(x, (list, tuple)):
        return max((_numel(y) for y in x), default=0)
    return 0


def _per_element(cost: int) -> Callable[..., int]:
    def flops(*args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        return cost * max(_numel(out_shape), *(_numel(a) for a in args), 0)
    return flops


def elementwise_flops() -> dict[Any, Callable[..., int]]:
    """aten op -> its FLOP formula, as FlopCounterMode's `custom_mapping` takes them (on shapes)."""
    table: dict[Any, Callable[..., int]] = {}
    for cost, names in _COSTS.items():
        for name in names:
            op = getattr(torch.ops.aten, name, None)
            if op is not None:
                table[op] = _per_element(cost)
    return table
