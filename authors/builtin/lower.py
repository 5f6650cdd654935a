"""Lowering a traced torch.fx graph into IR ops with canonical kinds, attributes and shapes.

Every node becomes an `Op` whose `torch_expr` reproduces it with PyTorch; nodes we recognise
also get a canonical `kind` and normalised attributes (dim, keepdim, eps, ...) that templates
match on. Shapes come from running the graph once on real (small) inputs.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from .ir import Op, Program, TensorMeta, Value

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
                    operator.le: "({0} <= {1})", operator.eq: "({0} == {1})", operator.ne: "({0} != {1})"}
VIEW_KINDS = {"view", "reshape", "flatten", "permute", "transpose", "t", "contiguous", "unsqueeze",
              "squeeze", "expand", "getitem", "size", "dim", "chunk", "split", "cat", "stack", "unbind"}

_MODULE_ACTS = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu", nn.Mish: "mish",
                nn.SELU: "selu", nn.ReLU6: "relu6", nn.Hardsigmoid: "hardsigmoid",
                nn.Hardswish: "hardswish", nn.LogSigmoid: "logsigmoid", nn.Softsign: "softsign",
                nn.Tanhshrink: "tanhshrink", nn.Identity: "identity"}


def _name(node: torch.fx.Node) -> str:
    return f"v_{node.name}"


def attr_path(target: str) -> str:
    """'layers.0.conv' -> 'self.layers[0].conv' (Sequential / ModuleList children are indexed)."""
    out = "self"
    for part in target.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


class _Lowerer:
    def __init__(self, gm: torch.fx.GraphModule, module: nn.Module):
        self.gm, self.module = gm, module
        self.values: dict[str, Value] = {}
        self.ops: list[Op] = []

    # -- rendering --------------------------------------------------------------------------
    def render(self, a: Any) -> str:
        if isinstance(a, torch.fx.Node):
            return self.values[a.name].name
        if isinstance(a, tuple):
            inner = ", ".join(self.render(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.render(x) for x in a) + "]"
        if isinstance(a, slice):
            return f"slice({self.render(a.start)}, {self.render(a.stop)}, {self.render(a.step)})"
        if isinstance(a, torch.dtype):
            return str(a)  # 'torch.float32'
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if a is Ellipsis:
            return "..."
        if isinstance(a, float) and (a != a or a in (float("inf"), float("-inf"))):
            return f"float({str(a)!r})"
        return repr(a)

    def value_of(self, a: Any) -> Value:
        if isinstance(a, torch.fx.Node):
            return self.values[a.name]
        return Value(name=self.render(a), const=a)

    # -- nodes ------------------------------------------------------------------------------
    def add(self, node: torch.fx.Node, result: Any) -> None:
        out = Value(name=_name(node), meta=_meta(result))
        if node.op == "placeholder":
            out.name = node.target
            self.values[node.name] = out
            return
        if node.op == "get_attr":
            self.values[node.name] = Value(name=attr_path(node.target), meta=_meta(result), is_param=True)
            return
        self.values[node.name] = out
        op = self.lower(node, out)
        self.ops.append(op)

    def lower(self, node: torch.fx.Node, out: Value) -> Op:
        args, kwargs = node.args, dict(node.kwargs)
        if node.op == "call_module":
            return self.lower_module(node, out)
        if node.op == "call_method":
            expr = f"{self.render(args[0])}.{node.target}({self.call_args(args[1:], kwargs)})"
            base = node.target.rstrip("_") if node.target.endswith("_") and not node.target.startswith(
                "_") else node.target
            inplace = base != node.target
            return self.canonical(base, args, kwargs, out, expr, inplace=inplace)
        target = node.target
        if target is getattr and len(args) == 2 and isinstance(args[1], str):
            return Op("getattr", [self.value_of(args[0])], out, {"name": args[1]},
                      f"{self.render(args[0])}.{args[1]}")
        if target in _OPERATOR_SYNTAX:
            expr = _OPERATOR_SYNTAX[target].format(*(self.render(a) for a in args))
            if target is operator.getitem:
                return Op("getitem", [self.value_of(args[0])], out, {"index": args[1]}, expr)
            if target in _OPERATORS:
                return self.canonical(_OPERATORS[target], args, kwargs, out, expr)
            return Op("torch", [self.value_of(a) for a in args], out, {}, expr)
        qual = _qualname(target)
        expr = f"{qual}({self.call_args(args, kwargs)})"
        name = getattr(target, "__name__", "")
        if name.endswith("_") and not name.startswith("_") and name not in SPECS:
            return Op("torch", self.operands(args, kwargs), out, {}, expr)
        return self.canonical(name, args, kwargs, out, expr)

    def call_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.render(a) for a in args] + [f"{k}={self.render(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def operands(self, args: tuple, kwargs: dict) -> list[Value]:
        flat: list[Any] = []
        for a in [*args, *kwargs.values()]:
            flat.extend(a if isinstance(a, (list, tuple)) else [a])
        return [self.value_of(a) for a in flat if isinstance(a, torch.fx.Node)]

    def canonical(self, name: str, args: tuple, kwargs: dict, out: Value, expr: str,
                  inplace: bool = False) -> Op:
        if name in VIEW_KINDS:
            return Op(name, self.operands(args, kwargs), out, {"args": args[1:], "kwargs": kwargs}, expr)
        spec = SPECS.get(name)
        if spec is None or inplace:
            return Op("torch", self.operands(args, kwargs), out, {}, expr)
        kind, n_tensors, names, defaults = spec
        if name == "flip" and len(args) > 2:  # x.flip(1, 2): the dims come as varargs
            args = (args[0], tuple(args[1:]))
        if len(args) < n_tensors and not kwargs:
            return Op("torch", self.operands(args, kwargs), out, {}, expr)
        operands = [self.value_of(a) for a in args[:n_tensors]]
        extra = dict(zip(names, args[n_tensors:], strict=False))
        kw = dict(kwargs)
        if kw.get("inplace") is False:  # torch.fx records F.relu / F.silu / ... with inplace=False
            del kw["inplace"]
        if name == "hardtanh":  # F.hardtanh's keywords are min_val / max_val
            kw = {{"min_val": "min", "max_val": "max"}.get(k, k): v for k, v in kw.items()}
        for k in ("input", "other", "self"):
            if k in kw and len(operands) < n_tensors:
                operands.append(self.value_of(kw.pop(k)))
        if len(operands) < n_tensors or set(kw) - set(names):
            return Op("torch", self.operands(args, kwargs), out, {}, expr)
        attrs = {**defaults, **extra, **kw}
        # Tensor-valued attributes (weights of F.layer_norm, bias of F.linear) become operands.
        tensor_attrs = {k: self.values[v.name] for k, v in attrs.items() if isinstance(v, torch.fx.Node)}
        for k in tensor_attrs:
            attrs[k] = tensor_attrs[k].name
        return Op(kind, operands + list(tensor_attrs.values()), out, attrs, expr)

    def lower_module(self, node: torch.fx.Node, out: Value) -> Op:
        mod = self.gm.get_submodule(node.target)
        x = [self.value_of(a) for a in node.args]
        p = attr_path(node.target)
        expr = f"{p}({self.call_args(node.args, dict(node.kwargs))})"

        def param(attr: str) -> Value | None:
            t = getattr(mod, attr, None)
            return Value(f"{p}.{attr}", meta=_meta(t), is_param=True) if isinstance(t, torch.Tensor) else None

        t = type(mod)
        if t in _LOSS_MODULES and not node.kwargs and all(v.is_tensor for v in x):
            return self.lower_loss_module(mod, x, out, expr)
        if node.kwargs or len(x) != 1 and not isinstance(mod, nn.Bilinear):
            return Op("torch", x, out, {}, expr)
        if t in _MODULE_ACTS:
            return Op(_MODULE_ACTS[t], x, out, {}, expr)
        if t is nn.GELU:
            return Op("gelu", x, out, {"approximate": mod.approximate}, expr)
        if t is nn.LeakyReLU:
            return Op("leaky_relu", x, out, {"negative_slope": mod.negative_slope}, expr)
        if t in (nn.ELU, nn.CELU):
            return Op("elu" if t is nn.ELU else "celu", x, out, {"alpha": mod.alpha}, expr)
        if t in (nn.Hardtanh,):
            return Op("clamp", x, out, {"min": mod.min_val, "max": mod.max_val}, expr)
        if t is nn.Softplus:
            return Op("softplus", x, out, {"beta": mod.beta, "threshold": mod.threshold}, expr)
        if t is nn.Dropout and (mod.p == 0 or not mod.training):
            return Op("identity", x, out, {}, expr)
        if t in (nn.Softmax, nn.LogSoftmax):
            return Op("softmax" if t is nn.Softmax else "log_softmax", x, out, {"dim": mod.dim}, expr)
        if t is nn.Linear:
            ins = [*x, param("weight")] + ([param("bias")] if mod.bias is not None else [])
            return Op("linear", ins, out, {"bias": p + ".bias" if mod.bias is not None else None}, expr)
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                            nn.ConvTranspose3d)):
            if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                return Op("torch", x, out, {}, expr)
            ins = [*x, param("weight")] + ([param("bias")] if mod.bias is not None else [])
            kind = "conv_transpose" if isinstance(mod, nn.modules.conv._ConvTransposeNd) else "conv"
            attrs = {"stride": mod.stride, "padding": mod.padding, "dilation": mod.dilation,
                     "groups": mod.groups, "dims": len(mod.kernel_size), "kernel_size": mod.kernel_size,
                     "bias": mod.bias is not None,
                     "output_padding": getattr(mod, "output_padding", (0,) * len(mod.kernel_size))}
            return Op(kind, ins, out, attrs, expr)
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            ins = [*x] + [v for v in (param("weight"), param("bias"), param("running_mean"),
                                      param("running_var")) if v is not None]
            attrs = {"training": mod.training or mod.running_mean is None, "eps": mod.eps,
                     "momentum": mod.momentum, "affine": mod.affine,
                     "track_running_stats": mod.track_running_stats}
            return Op("batch_norm", ins, out, attrs, expr)
        if isinstance(mod, nn.LayerNorm):
            ins = [*x] + [v for v in (param("weight"), param("bias")) if v is not None]
            return Op("layer_norm", ins, out, {"normalized_shape": tuple(mod.normalized_shape),
                                               "eps": mod.eps, "affine": mod.elementwise_affine,
                                               "has_bias": getattr(mod, "bias", None) is not None}, expr)
        if isinstance(mod, nn.GroupNorm):
            ins = [*x] + [v for v in (param("weight"), param("bias")) if v is not None]
            return Op("group_norm", ins, out, {"num_groups": mod.num_groups, "eps": mod.eps,
                                               "affine": mod.affine}, expr)
        if isinstance(mod, nn.modules.instancenorm._InstanceNorm):
            ins = [*x] + [v for v in (param("weight"), param("bias")) if v is not None]
            uses_batch = mod.training or not mod.track_running_stats
            if not uses_batch:
                return Op("torch", x, out, {}, expr)
            return Op("instance_norm", ins, out, {"eps": mod.eps, "affine": mod.affine}, expr)
        if hasattr(nn, "RMSNorm") and isinstance(mod, nn.RMSNorm):
            ins = [*x] + ([param("weight")] if mod.weight is not None else [])
            return Op("rms_norm", ins, out, {"normalized_shape": tuple(mod.normalized_shape),
                                             "eps": mod.eps}, expr)
        pools = {nn.MaxPool1d: ("max_pool", 1), nn.MaxPool2d: ("max_pool", 2), nn.MaxPool3d: ("max_pool", 3),
                 nn.AvgPool1d: ("avg_pool", 1), nn.AvgPool2d: ("avg_pool", 2), nn.AvgPool3d: ("avg_pool", 3)}
        if t in pools:
            kind, dims = pools[t]
            attrs = {k: getattr(mod, k, None) for k in ("kernel_size", "stride", "padding", "dilation",
                                                         "ceil_mode", "count_include_pad",
                                                         "divisor_override", "return_indices")}
            attrs["dims"] = dims
            return Op(kind, x, out, attrs, expr)
        adaptive = {nn.AdaptiveAvgPool1d: 1, nn.AdaptiveAvgPool2d: 2, nn.AdaptiveAvgPool3d: 3}
        if t in adaptive:
            attrs = {"output_size": mod.output_size, "dims": adaptive[t]}
            return Op("adaptive_avg_pool", x, out, attrs, expr)
        if isinstance(mod, nn.Flatten):
            return Op("flatten", x, out, {"args": (mod.start_dim, mod.end_dim), "kwargs": {}}, expr)
        return Op("torch", x, out, {}, expr)


    def lower_loss_module(self, mod: nn.Module, x: list[Value], out: Value, expr: str) -> Op:
        """A loss module as its functional kind, with the attributes the functional form traces."""
        kind, names = _LOSS_MODULES[type(mod)]
        spec = SPECS[kind]
        if len(x) != spec[1] or getattr(mod, "weight", None) is not None:
            return Op("torch", x, out, {}, expr)
        return Op(kind, x, out, {**spec[3], **{k: getattr(mod, k) for k in names}}, expr)


def _qualname(target: Any) -> str:
    name = getattr(target, "__name__", None)
    if name and getattr(F, name, None) is target:
        return f"F.{name}"
    if name and getattr(torch, name, None) is target:
        return f"torch.{name}"
    if name and getattr(torch.special, name.removeprefix("special_"), None) is target:
        return f"torch.special.{name.removeprefix('special_')}"
    if name and getattr(torch.linalg, name, None) is target:
        return f"torch.linalg.{name}"
    mod = getattr(target, "__module__", "") or ""
    if name and mod == "math":
        return f"math.{name}"
    if name and mod == "builtins":
        return name
    if name and mod.startswith("torch"):
        return f"{mod}.{name}"
    raise ValueError(f"cannot name call target {target!r} in generated code")


def _meta(x: Any) -> TensorMeta | None:
    if isinstance(x, torch.Tensor):
        return TensorMeta(tuple(x.shape), x.dtype, tuple(x.stride()))
    return None


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, lowerer: _Lowerer):
        super().__init__(gm)
        self.lowerer = lowerer

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        if n.op != "output":
            self.lowerer.add(n, result)
        return result


def lower_graph(gm: torch.fx.GraphModule, module: nn.Module, inputs: list[Any]) -> Program:
    lw = _Lowerer(gm, module)
    with torch.no_grad():
        _Recorder(gm, lw).run(*inputs)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = _map_out(out_node.args[0], lw)
    ins = [lw.values[n.name] for n in gm.graph.nodes if n.op == "placeholder"]
    return Program(inputs=ins, ops=lw.ops, outputs=outputs, values=dict(lw.values))


def _map_out(a: Any, lw: _Lowerer) -> Any:
    if isinstance(a, torch.fx.Node):
        return lw.values[a.name]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_out(x, lw) for x in a)
    return Value(name=lw.render(a), const=a)
