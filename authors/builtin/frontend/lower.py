"""Lowering a traced torch.fx graph into IR ops with canonical kinds, attributes and shapes.

Every node becomes an `Op` whose `torch_expr` reproduces it with PyTorch; nodes we recognise
also get a canonical `kind` and normalised attributes (dim, keepdim, eps, ...) that templates
match on. Shapes come from running the graph once on real (small) inputs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from .functionalize import FUNCTIONALIZED
from .ir import Op, Program, TensorMeta, Value
from .kinds import (
    _LOSS_MODULES,
    _MODULE_ACTS,
    _OPERATOR_SYNTAX,
    _OPERATORS,
    SPECS,
    VIEW_KINDS,
)


def attr_path(target: str) -> str:
    """'layers.0.conv' -> 'self.layers[0].conv' (Sequential / ModuleList children are indexed)."""
    out = "self"
    for part in target.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


# A tensor the tracer made from Python values that no recorded expression rebuilds (constants.py:
# `torch.tensor(values)` computed while tracing, a constant changed in place) is written into
# ModelNew as a literal. Rationale: 4096 numbers are at most ~100 KB of source; anything larger is
# refused (CaptureError: the forward runs verbatim) rather than bloating solution.py. Buffers stay
# out of this path: the tracers keep them as graph inputs.
MAX_CONSTANT_ELEMENTS = 4096


ConstantExprs = Callable[[torch.Tensor], "str | None"]


def constant_expr(t: torch.Tensor) -> str:
    """A Python expression that rebuilds tensor `t` exactly (values, dtype, shape)."""
    if t.device.type == "meta":
        raise ValueError("a tensor constant was traced on the meta device: its values are unknown")
    if t.is_complex() or t.numel() > MAX_CONSTANT_ELEMENTS:
        raise ValueError(f"tensor constant of {t.numel()} {t.dtype} elements cannot be written as a literal")

    def lit(x: Any) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(lit(v) for v in x) + "]"
        if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
            return f"float({str(x)!r})"
        return repr(x)  # a Python float's repr round-trips the float32 value it came from

    return f"torch.tensor({lit(t.tolist())}, dtype={t.dtype}).reshape({tuple(t.shape)!r})"


def _owned_by(module: nn.Module, target: str) -> bool:
    """Is `target` an attribute path of the user's module (not one the tracer added)?"""
    obj: Any = module
    for part in target.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


class _Lowerer:
    def __init__(self, gm: torch.fx.GraphModule, module: nn.Module, known: ConstantExprs | None = None,
                 prefix: str = ""):
        self.gm, self.module, self.known, self.prefix = gm, module, known, prefix
        self.values: dict[str, Value] = {}
        self.ops: list[Op] = []
        self.constants: dict[str, str] = {}

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
        out = Value(name=f"v{self.prefix}_{node.name}", meta=_meta(result))
        if node.op == "placeholder":
            out.name = node.target
            self.values[node.name] = out
            return
        if node.op == "get_attr":
            target = node.target
            if not _owned_by(self.module, target):
                # ModelNew runs the reference's __init__, which never made this tensor: register it.
                known = self.known(result) if self.known is not None else None
                target = f"_s{self.prefix}{target}" if self.prefix else target
                self.constants[target] = known or constant_expr(result)
            self.values[node.name] = Value(name=attr_path(target), meta=_meta(result), is_param=True)
            return
        if node.meta.get(FUNCTIONALIZED):
            first = self.values[node.args[0].name].meta
            same = first is not None and out.meta is not None and \
                (first.shape, first.dtype) == (out.meta.shape, out.meta.dtype)
            if not same:
                raise ValueError(f"{node.target}_ on {node.args[0].name} promotes or broadcasts its target")
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
        if target is operator.setitem:  # a statement, not an expression: emitted as written
            stmt = f"{self.render(args[0])}[{self.render(args[1])}] = {self.render(args[2])}"
            return Op("setitem", self.operands(args, kwargs), out, {"statement": stmt}, stmt)
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
        if isinstance(mod, nn.MultiheadAttention):
            return _lower_mha(mod, node, x, out, expr, param, self.value_of)
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
            # Only batch statistics and no running ones: the generated norm updates none (in
            # training a tracking module would update its buffers; in eval it would read them).
            if mod.track_running_stats:
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


def _lower_mha(mod: nn.MultiheadAttention, node: torch.fx.Node, x: list[Value], out: Value, expr: str,
               param: Callable[[str], Value | None], value_of: Callable[[Any], Value]) -> Op:
    """nn.MultiheadAttention as a `multihead_attention` op (families/attention expands it): inputs
    query, key, value, the packed in-projection and the out-projection parameters, then the attention
    mask where one is passed; the forms that family does not implement stay `torch`."""
    kw = dict(node.kwargs)
    names = ("key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal")
    kw.update(zip(names, node.args[3:], strict=False))
    mask = kw.get("attn_mask")
    plain = (len(node.args) == 3 and all(v.is_tensor for v in x) and set(kw) <= set(names)
             and kw.get("key_padding_mask") is None and (mask is None or isinstance(mask, torch.fx.Node))
             and all(isinstance(kw.get(k, False), bool) for k in ("need_weights", "is_causal"))
             and mod._qkv_same_embed_dim and mod.in_proj_bias is not None and mod.bias_k is None
             and not mod.add_zero_attn and (mod.dropout == 0 or not mod.training))
    if not plain:
        return Op("torch", x, out, {}, expr)
    p = attr_path(str(node.target))
    o_b = mod.out_proj.bias
    ins = [*x, param("in_proj_weight"), param("in_proj_bias"),
           Value(f"{p}.out_proj.weight", meta=_meta(mod.out_proj.weight), is_param=True)]
    ins += [Value(f"{p}.out_proj.bias", meta=_meta(o_b), is_param=True)] if o_b is not None else []
    attrs = {"num_heads": mod.num_heads, "batch_first": mod.batch_first, "out_bias": o_b is not None,
             "attn_mask": None}
    if mask is not None:
        ins.append(value_of(mask))
        attrs["attn_mask"] = ins[-1].name
    return Op("multihead_attention", ins, out, attrs, expr)


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


def lower_graph(gm: torch.fx.GraphModule, module: nn.Module, inputs: list[Any],
                known: ConstantExprs | None = None, prefix: str = "") -> Program:
    """The IR of `gm`; `known` names the expression that rebuilt a tensor constant, where one did;
    `prefix` goes into every value and constant name (`v<prefix>_relu`)."""
    lw = _Lowerer(gm, module, known, prefix)
    with torch.no_grad():
        _Recorder(gm, lw).run(*inputs)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = _map_out(out_node.args[0], lw)
    ins = [lw.values[n.name] for n in gm.graph.nodes if n.op == "placeholder"]
    return Program(inputs=ins, ops=lw.ops, outputs=outputs, values=dict(lw.values), constants=lw.constants)


def _map_out(a: Any, lw: _Lowerer) -> Any:
    if isinstance(a, torch.fx.Node):
        return lw.values[a.name]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_out(x, lw) for x in a)
    return Value(name=lw.render(a), const=a)
