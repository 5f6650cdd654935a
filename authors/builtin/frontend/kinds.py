"""Canonical kinds: the tables that map torch functions, methods, operators and modules to the IR's
op kinds and their parameter names (used by lower.py)."""

from __future__ import annotations

import operator
from typing import Any

import torch.nn as nn

# ---- canonical kinds ------------------------------------------------------------------------
# name -> (kind, parameter names after the tensor input(s), defaults). `n_tensors` leading
# positional arguments are operands; the rest bind to the names.
_P = tuple[str, int, tuple[str, ...], dict[str, Any]]

_UNARY = ["relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "sin", "cos", "erf",
          "log1p", "expm1", "reciprocal", "square", "sign", "floor", "ceil", "exp2", "log2", "trunc"]
SPECS: dict[str, _P] = {n: (n, 1, (), {}) for n in _UNARY}
SPECS.update({
    "gelu": ("gelu", 1, ("approximate",), {"approximate": "none"}),
    "silu": ("silu", 1, (), {}), "mish": ("mish", 1, (), {}), "selu": ("selu", 1, (), {}),
    "relu6": ("relu6", 1, (), {}), "hardsigmoid": ("hardsigmoid", 1, (), {}),
    "hardswish": ("hardswish", 1, (), {}), "logsigmoid": ("logsigmoid", 1, (), {}),
    "log_sigmoid": ("logsigmoid", 1, (), {}),  # F.logsigmoid is torch._C._nn.log_sigmoid
    "softsign": ("softsign", 1, (), {}), "tanhshrink": ("tanhshrink", 1, (), {}),
    "softplus": ("softplus", 1, ("beta", "threshold"), {"beta": 1.0, "threshold": 20.0}),
    "elu": ("elu", 1, ("alpha",), {"alpha": 1.0}),
    "celu": ("celu", 1, ("alpha",), {"alpha": 1.0}),
    "leaky_relu": ("leaky_relu", 1, ("negative_slope",), {"negative_slope": 0.01}),
    "hardtanh": ("clamp", 1, ("min", "max"), {"min": -1.0, "max": 1.0}),
    "clamp": ("clamp", 1, ("min", "max"), {"min": None, "max": None}),
    "clip": ("clamp", 1, ("min", "max"), {"min": None, "max": None}),
    "clamp_min": ("clamp", 1, ("min",), {"max": None}),
    "clamp_max": ("clamp", 1, ("max",), {"min": None}),
    "add": ("add", 2, ("alpha",), {"alpha": 1}), "sub": ("sub", 2, ("alpha",), {"alpha": 1}),
    "mul": ("mul", 2, (), {}), "div": ("div", 2, ("rounding_mode",), {"rounding_mode": None}),
    "true_divide": ("div", 2, (), {"rounding_mode": None}),
    "pow": ("pow", 2, (), {}), "maximum": ("maximum", 2, (), {}), "minimum": ("minimum", 2, (), {}),
    "where": ("where", 3, (), {}), "rsub": ("rsub", 2, (), {}),
    # reductions
    "sum": ("sum", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "mean": ("mean", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "amax": ("amax", 1, ("dim", "keepdim"), {"dim": (), "keepdim": False}),
    "amin": ("amin", 1, ("dim", "keepdim"), {"dim": (), "keepdim": False}),
    "argmax": ("argmax", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "argmin": ("argmin", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "max": ("max", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "min": ("min", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "prod": ("prod", 1, ("dim", "keepdim"), {"dim": None, "keepdim": False}),
    "logsumexp": ("logsumexp", 1, ("dim", "keepdim"), {"keepdim": False}),
    "var": ("var", 1, ("dim", "unbiased", "keepdim"), {"dim": None, "unbiased": True, "keepdim": False}),
    "std": ("std", 1, ("dim", "unbiased", "keepdim"), {"dim": None, "unbiased": True, "keepdim": False}),
    # torch.norm traces with out=None, dtype=None (templates check both are None).
    "norm": ("norm", 1, ("p", "dim", "keepdim", "out", "dtype"),
             {"p": "fro", "dim": None, "keepdim": False, "out": None, "dtype": None}),
    "linalg_vector_norm": ("norm", 1, ("p", "dim", "keepdim"), {"p": 2.0, "dim": None, "keepdim": False}),
    "vector_norm": ("norm", 1, ("p", "dim", "keepdim"), {"p": 2.0, "dim": None, "keepdim": False}),
    # row ops
    # F.softmax / F.log_softmax trace with _stacklevel and dtype (templates check dtype is None).
    "softmax": ("softmax", 1, ("dim", "_stacklevel", "dtype"),
                {"dim": None, "_stacklevel": 3, "dtype": None}),
    "log_softmax": ("log_softmax", 1, ("dim", "_stacklevel", "dtype"),
                    {"dim": None, "_stacklevel": 3, "dtype": None}),
    "cumsum": ("cumsum", 1, ("dim",), {}), "cumprod": ("cumprod", 1, ("dim",), {}),
    "flip": ("flip", 1, ("dims",), {}),
    "layer_norm": ("layer_norm", 1, ("normalized_shape", "weight", "bias", "eps"),
                   {"weight": None, "bias": None, "eps": 1e-5}),
    "rms_norm": ("rms_norm", 1, ("normalized_shape", "weight", "eps"), {"weight": None, "eps": None}),
    "group_norm": ("group_norm", 1, ("num_groups", "weight", "bias", "eps"),
                   {"weight": None, "bias": None, "eps": 1e-5}),
    # F.normalize traces with out=None (templates must check attrs["out"] is None).
    "normalize": ("normalize", 1, ("p", "dim", "eps", "out"),
                  {"p": 2.0, "dim": 1, "eps": 1e-12, "out": None}),
    # gemm
    "matmul": ("matmul", 2, (), {}), "mm": ("matmul", 2, (), {}), "bmm": ("bmm", 2, (), {}),
    "linear": ("linear", 2, ("bias",), {"bias": None}),
    # attention (families/attention): SDPA, and the mask ops hand-written attention is made of
    "scaled_dot_product_attention": ("sdpa", 3,
                                     ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"),
                                     {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None,
                                      "enable_gqa": False}),
    "masked_fill": ("masked_fill", 2, ("value",), {}),
    "triu": ("triu", 1, ("diagonal",), {"diagonal": 0}),
    # losses
    # Recent PyTorch passes weight=None to mse_loss / l1_loss / huber_loss (templates check it).
    "mse_loss": ("mse_loss", 2, ("size_average", "reduce", "reduction", "weight"),
                 {"reduction": "mean", "weight": None}),
    "l1_loss": ("l1_loss", 2, ("size_average", "reduce", "reduction", "weight"),
                {"reduction": "mean", "weight": None}),
    "smooth_l1_loss": ("smooth_l1_loss", 2, ("size_average", "reduce", "reduction", "beta"),
                       {"reduction": "mean", "beta": 1.0}),
    "huber_loss": ("huber_loss", 2, ("reduction", "delta", "weight"),
                   {"reduction": "mean", "delta": 1.0, "weight": None}),
    "cross_entropy": ("cross_entropy", 2, ("weight", "size_average", "ignore_index", "reduce",
                                           "reduction", "label_smoothing"),
                      {"weight": None, "ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}),
    "kl_div": ("kl_div", 2, ("size_average", "reduce", "reduction", "log_target"),
               {"reduction": "mean", "log_target": False}),
    "cosine_similarity": ("cosine_similarity", 2, ("dim", "eps"), {"dim": 1, "eps": 1e-8}),
    "cosine_embedding_loss": ("cosine_embedding_loss", 3, ("margin", "size_average", "reduce", "reduction"),
                              {"margin": 0.0, "reduction": "mean"}),
})
# Loss modules: the functional kind and the module attributes that are its keyword arguments
# (nn.CrossEntropyLoss(weight=...) keeps its weight as a buffer: left to PyTorch when set).
_LOSS_MODULES: dict[type, tuple[str, tuple[str, ...]]] = {
    nn.MSELoss: ("mse_loss", ("reduction",)), nn.L1Loss: ("l1_loss", ("reduction",)),
    nn.SmoothL1Loss: ("smooth_l1_loss", ("reduction", "beta")),
    nn.HuberLoss: ("huber_loss", ("reduction", "delta")),
    nn.KLDivLoss: ("kl_div", ("reduction", "log_target")),
    nn.CrossEntropyLoss: ("cross_entropy", ("reduction", "ignore_index", "label_smoothing")),
    nn.CosineEmbeddingLoss: ("cosine_embedding_loss", ("reduction", "margin")),
    nn.CosineSimilarity: ("cosine_similarity", ("dim", "eps")),
}
# Functional pooling (F.max_pool2d, F.avg_pool3d, F.adaptive_avg_pool2d ...): the same kinds and
# attrs as the nn.*Pool modules in lower_module; stride None means stride = kernel_size.
_POOL_DEFAULTS = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False, "count_include_pad": True,
                  "divisor_override": None, "return_indices": False}
for _d in (1, 2, 3):
    SPECS[f"max_pool{_d}d"] = ("max_pool", 1, ("kernel_size", "stride", "padding", "dilation", "ceil_mode",
                                               "return_indices"), {**_POOL_DEFAULTS, "dims": _d})
    SPECS[f"avg_pool{_d}d"] = ("avg_pool", 1, ("kernel_size", "stride", "padding", "ceil_mode",
                                               "count_include_pad", "divisor_override")[:5 if _d == 1 else 6],
                               {**_POOL_DEFAULTS, "dims": _d})
    SPECS[f"adaptive_avg_pool{_d}d"] = ("adaptive_avg_pool", 1, ("output_size",), {"dims": _d})
_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
              operator.neg: "neg", operator.pow: "pow", operator.matmul: "matmul"}
_OPERATOR_SYNTAX = {operator.add: "({0} + {1})", operator.sub: "({0} - {1})", operator.mul: "({0} * {1})",
                    operator.truediv: "({0} / {1})", operator.neg: "(-{0})", operator.pow: "({0} ** {1})",
                    operator.matmul: "({0} @ {1})", operator.getitem: "{0}[{1}]",
                    operator.floordiv: "({0} // {1})", operator.mod: "({0} % {1})",
                    operator.gt: "({0} > {1})", operator.lt: "({0} < {1})", operator.ge: "({0} >= {1})",
                    operator.le: "({0} <= {1})", operator.eq: "({0} == {1})", operator.ne: "({0} != {1})",
                    operator.invert: "(~{0})", operator.and_: "({0} & {1})", operator.or_: "({0} | {1})",
                    operator.xor: "({0} ^ {1})", operator.lshift: "({0} << {1})",
                    operator.rshift: "({0} >> {1})", operator.pos: "(+{0})", operator.abs: "abs({0})"}
VIEW_KINDS = {"view", "reshape", "flatten", "permute", "transpose", "t", "contiguous", "unsqueeze",
              "squeeze", "expand", "getitem", "size", "dim", "chunk", "split", "cat", "stack", "unbind"}

_MODULE_ACTS = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu", nn.Mish: "mish",
                nn.SELU: "selu", nn.ReLU6: "relu6", nn.Hardsigmoid: "hardsigmoid",
                nn.Hardswish: "hardswish", nn.LogSigmoid: "logsigmoid", nn.Softsign: "softsign",
                nn.Tanhshrink: "tanhshrink", nn.Identity: "identity"}
