"""Pointwise code generation shared by every template: Triton expressions for elementwise ops,
chains of them as statements, and loads of broadcast operands by strides.

Templates fuse these chains as prologues (before a reduction or GEMM reads its input) and
epilogues (on an accumulator tile before the store), so one table serves every family.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...frontend.ir import Op, Value

_F = Callable[[list[str], dict], str]


def _f(v: object) -> str:
    """A Python scalar as a Triton literal (floats keep a decimal point so they stay fp32)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return f"{v}"
    if isinstance(v, float):
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    return str(v)


def tuple_literal(items: list[str]) -> str:
    """A tuple literal of generated expressions (a launcher's dtypes or scalars)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _tanh(x: str) -> str:
    # tanh(x) = 1 - 2 / (exp(2x) + 1): exact limits at +-inf and no libdevice (which the CPU
    # interpreter lacks), but its absolute error (~1e-7 in fp32) is a large relative one near 0,
    # where outputs are tiny; there the odd Taylor series to x^9 (relative error < 1e-11 below 1/8).
    x2 = f"({x}) * ({x})"
    series = (f"({x}) * (1.0 + {x2} * (-0.3333333333333333 + {x2} * (0.13333333333333333 + {x2} * "
              f"(-0.05396825396825397 + {x2} * 0.021869488536155203))))")
    return f"tl.where(tl.abs({x}) < 0.125, {series}, 1.0 - 2.0 / (tl.exp(2.0 * ({x})) + 1.0))"


def _log1p(x: str) -> str:
    # log(1 + x) loses x's low bits where 1 + x rounds; log(u) * x / (u - 1) with u = 1 + x divides
    # that rounding back out (exact where u == 1: x itself).
    u = f"(1.0 + ({x}))"
    return f"tl.where({u} == 1.0, ({x}), tl.log({u}) * ({x}) / ({u} - 1.0))"


def _expm1(x: str) -> str:
    # exp(x) - 1 cancels near 0; there the Taylor series to x^6 (relative error < 1e-10 below 1/16).
    series = (f"({x}) * (1.0 + ({x}) * (0.5 + ({x}) * (0.16666666666666666 + ({x}) * (0.041666666666666664"
              f" + ({x}) * (0.008333333333333333 + ({x}) * 0.001388888888888889)))))")
    return f"tl.where(tl.abs({x}) < 0.0625, {series}, tl.exp({x}) - 1.0)"


def _softplus(x: str, beta: float, threshold: float) -> str:
    bx = f"({_f(float(beta))} * ({x}))"
    soft = _log1p(f"tl.exp(tl.minimum({bx}, {_f(float(threshold))}))")  # tiny far below 0: log1p
    return f"tl.where({bx} > {_f(float(threshold))}, ({x}), {soft} / {_f(float(beta))})"


def _elu(x: str, alpha: float, divide: float = 1.0) -> str:
    # x above 0, alpha * expm1(x / divide) below: expm1, not exp - 1, as the output is tiny just
    # below 0 (the min keeps the unused branch finite).
    neg = f"tl.minimum({x}, 0.0)" if divide == 1.0 else f"(tl.minimum({x}, 0.0) / {_f(divide)})"
    return f"tl.where(({x}) > 0, ({x}), {_f(alpha)} * {_expm1(neg)})"


_SQRT1_2 = 0.7071067811865476
_SQRT_2_PI = 0.7978845608028654

TRITON: dict[str, _F] = {
    "identity": lambda a, k: a[0],
    "relu": lambda a, k: f"tl.maximum({a[0]}, 0.0)",
    "sigmoid": lambda a, k: f"tl.sigmoid({a[0]})",
    "tanh": lambda a, k: _tanh(a[0]),
    "exp": lambda a, k: f"tl.exp({a[0]})",
    "exp2": lambda a, k: f"tl.exp2({a[0]})",
    "log": lambda a, k: f"tl.log({a[0]})",
    "log2": lambda a, k: f"tl.log2({a[0]})",
    "abs": lambda a, k: f"tl.abs({a[0]})",
    "neg": lambda a, k: f"(-({a[0]}))",
    "sqrt": lambda a, k: f"tl.sqrt({a[0]})",
    "rsqrt": lambda a, k: f"tl.rsqrt({a[0]})",
    "sin": lambda a, k: f"tl.sin({a[0]})",
    "cos": lambda a, k: f"tl.cos({a[0]})",
    "erf": lambda a, k: f"tl.math.erf({a[0]})",
    "log1p": lambda a, k: _log1p(a[0]),
    "expm1": lambda a, k: _expm1(a[0]),
    "reciprocal": lambda a, k: f"(1.0 / ({a[0]}))",
    "square": lambda a, k: f"(({a[0]}) * ({a[0]}))",
    "sign": lambda a, k: f"tl.where(({a[0]}) > 0, 1.0, tl.where(({a[0]}) < 0, -1.0, 0.0))",
    "floor": lambda a, k: f"tl.floor({a[0]})",
    "ceil": lambda a, k: f"tl.ceil({a[0]})",
    "gelu": lambda a, k: _gelu(a[0], k.get("approximate", "none")),
    "silu": lambda a, k: f"(({a[0]}) * tl.sigmoid({a[0]}))",
    "mish": lambda a, k: f"(({a[0]}) * {_tanh(_softplus(a[0], 1.0, 20.0))})",
    "softplus": lambda a, k: _softplus(a[0], k.get("beta", 1.0), k.get("threshold", 20.0)),
    "elu": lambda a, k: _elu(a[0], float(k.get("alpha", 1.0))),
    "celu": lambda a, k: _elu(a[0], float(k.get("alpha", 1.0)), divide=float(k.get("alpha", 1.0))),
    "selu": lambda a, k: f"(1.0507009873554805 * {_elu(a[0], 1.6732632423543772)})",
    "leaky_relu": lambda a, k: (f"tl.where(({a[0]}) > 0, ({a[0]}), "
                                f"({a[0]}) * {_f(float(k.get('negative_slope', 0.01)))})"),
    "relu6": lambda a, k: f"tl.minimum(tl.maximum({a[0]}, 0.0), 6.0)",
    "hardsigmoid": lambda a, k: f"(tl.minimum(tl.maximum(({a[0]}) + 3.0, 0.0), 6.0) / 6.0)",
    "hardswish": lambda a, k: f"(({a[0]}) * tl.minimum(tl.maximum(({a[0]}) + 3.0, 0.0), 6.0) / 6.0)",
    "logsigmoid": lambda a, k: f"(tl.minimum({a[0]}, 0.0) - {_log1p(f'tl.exp(-tl.abs({a[0]}))')})",
    "softsign": lambda a, k: f"(({a[0]}) / (1.0 + tl.abs({a[0]})))",
    "tanhshrink": lambda a, k: f"(({a[0]}) - {_tanh(a[0])})",
    "clamp": lambda a, k: _clamp(a[0], k.get("min"), k.get("max")),
    "add": lambda a, k: f"(({a[0]}) + {_alpha(k)}({a[1]}))",
    "sub": lambda a, k: f"(({a[0]}) - {_alpha(k)}({a[1]}))",
    "rsub": lambda a, k: f"(({a[1]}) - ({a[0]}))",
    "mul": lambda a, k: f"(({a[0]}) * ({a[1]}))",
    "div": lambda a, k: f"(({a[0]}) / ({a[1]}))",
    "maximum": lambda a, k: f"tl.maximum({a[0]}, {a[1]})",
    "minimum": lambda a, k: f"tl.minimum({a[0]}, {a[1]})",
    "where": lambda a, k: f"tl.where({a[0]}, {a[1]}, {a[2]})",
    "pow": lambda a, k: _pow(a[0], a[1]),
    # Elementwise losses with reduction='none' (is_pointwise refuses the reduced forms).
    "mse_loss": lambda a, k: f"((({a[0]}) - ({a[1]})) * (({a[0]}) - ({a[1]})))",
    "l1_loss": lambda a, k: f"tl.abs(({a[0]}) - ({a[1]}))",
    "smooth_l1_loss": lambda a, k: _smooth_l1(f"(({a[0]}) - ({a[1]}))", float(k.get("beta", 1.0)), False),
    "huber_loss": lambda a, k: _smooth_l1(f"(({a[0]}) - ({a[1]}))", float(k.get("delta", 1.0)), True),
    "kl_div": lambda a, k: _kl_div(a[0], a[1], bool(k.get("log_target"))),
}
_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div")


def _kl_div(x: str, t: str, log_target: bool) -> str:
    """PyTorch's pointwise KL term: xlogy(t, t) - t * x (0 where t == 0), or exp(t) (t - x)."""
    if log_target:
        return f"(tl.exp({t}) * (({t}) - ({x})))"
    return f"(tl.where(({t}) == 0, 0.0, ({t}) * tl.log({t})) - ({t}) * ({x}))"


def _smooth_l1(d: str, b: float, huber: bool) -> str:
    """smooth_l1 (beta): 0.5 d^2 / beta below beta, |d| - 0.5 beta above (|d| at beta = 0);
    huber (delta): 0.5 d^2 below delta, delta (|d| - 0.5 delta) above."""
    if b <= 0:
        return f"tl.abs({d})"
    quad = f"0.5 * {d} * {d}" + ("" if huber else f" / {_f(b)}")
    lin = f"{_f(b)} * (tl.abs({d}) - {_f(0.5 * b)})" if huber else f"(tl.abs({d}) - {_f(0.5 * b)})"
    return f"tl.where(tl.abs({d}) < {_f(b)}, {quad}, {lin})"


def _alpha(k: dict) -> str:
    return "" if k.get("alpha", 1) == 1 else f"{_f(k['alpha'])} * "


def _gelu(x: str, approximate: str) -> str:
    if approximate == "none":
        return f"(0.5 * ({x}) * (1.0 + tl.math.erf(({x}) * {_SQRT1_2})))"
    inner = f"{_SQRT_2_PI} * (({x}) + 0.044715 * ({x}) * ({x}) * ({x}))"
    return f"(0.5 * ({x}) * (1.0 + {_tanh(inner)}))"


def _clamp(x: str, lo: object, hi: object) -> str:
    if lo is not None:
        x = f"tl.maximum({x}, {_f(float(lo))})"
    if hi is not None:
        x = f"tl.minimum({x}, {_f(float(hi))})"
    return x


def _pow(x: str, e: str) -> str:
    try:
        v = float(e)
    except ValueError:
        return f"tl.exp(({e}) * tl.log({x}))"
    if v == 2.0:
        return f"(({x}) * ({x}))"
    if v == 3.0:
        return f"(({x}) * ({x}) * ({x}))"
    if v == 0.5:
        return f"tl.sqrt({x})"
    if v == 1.0:
        return x
    if v == -1.0:
        return f"(1.0 / ({x}))"
    # Signed bases with integral exponents: |x|^e with the sign restored for odd e.
    if v.is_integer():
        mag = f"tl.exp({_f(v)} * tl.log(tl.abs({x})))"
        return mag if int(v) % 2 == 0 else f"tl.where(({x}) < 0, -{mag}, {mag})"
    return f"tl.exp({_f(v)} * tl.log({x}))"


def is_pointwise(op: Op) -> bool:
    """Elementwise ops we can generate; `div` with a rounding mode and `pow` with a tensor
    exponent of unknown sign stay in PyTorch."""
    if op.kind not in TRITON or op.out.meta is None:
        return False
    if op.kind == "div" and op.attrs.get("rounding_mode") is not None:
        return False
    if op.kind == "pow" and (len(op.inputs) < 2 or op.inputs[1].is_tensor or op.inputs[0].const is not None):
        return False
    if op.kind == "clamp" and any(isinstance(op.attrs.get(b), str) for b in ("min", "max")):
        return False  # tensor bounds
    if not op.out.meta.dtype.is_floating_point and op.kind not in ("where",):
        return False
    if op.kind in _LOSSES and (op.attrs.get("reduction") != "none" or any(
            op.attrs.get(k) is not None for k in ("size_average", "reduce", "weight"))):
        return False
    return all(v.is_tensor or isinstance(v.const, (int, float, bool))
               or (is_runtime_scalar(v) and op.kind in SCALAR_OPERAND_OPS) for v in op.inputs)


SCALAR_OPERAND_OPS = frozenset({"add", "sub", "rsub", "mul", "div"})
"""Pointwise ops that may take a Python number known only at run time (`scores / math.sqrt(d)`,
d from a shape) as an operand: templates with `Template.runtime_scalars` pass it as a kernel
argument; the others leave such chains to PyTorch."""


def is_runtime_scalar(v: Value) -> bool:
    """A Python number computed in the forward (from shapes, say): neither a tensor nor a constant."""
    return not v.is_tensor and v.const is None


def runtime_scalars(ops: list[Op]) -> list[Value]:
    """Run-time scalar operands of a chain, in first-use order."""
    return _first_used(ops, is_runtime_scalar)


def chain_statements(ops: list[Op], env: dict[str, str], prefix: str = "t") -> list[str]:
    """Triton statements computing each op of a pointwise chain; `env` maps value names to
    Triton variables (pre-filled with the loaded external inputs) and is extended in place."""
    lines = []
    for i, op in enumerate(ops):
        missing = [v.name for v in op.inputs if is_runtime_scalar(v) and v.name not in env]
        if missing:  # the template must pass run-time scalars in (Template.runtime_scalars)
            raise ValueError(f"run-time scalar operand(s) {missing} of {op.out.name} have no kernel argument")
        args = [env[v.name] if v.is_tensor or v.name in env else _f(v.const) for v in op.inputs]
        var = f"{prefix}{len(env)}_{i}"
        lines.append(f"{var} = {TRITON[op.kind](args, op.attrs)}")
        env[op.out.name] = var
    return lines


def external_inputs(ops: list[Op], produced: set[str] | None = None) -> list[Value]:
    """Tensor values the chain reads but does not produce, in first-use order."""
    return _first_used(ops, lambda v: v.is_tensor, produced)


def _first_used(ops: list[Op], keep: Callable[[Value], bool],
                produced: set[str] | None = None) -> list[Value]:
    """Inputs of the chain passing `keep` that neither `produced` nor the chain itself makes,
    each once, in first-use order."""
    made = set(produced or ())
    seen: dict[str, Value] = {}
    for op in ops:
        for v in op.inputs:
            if keep(v) and v.name not in made and v.name not in seen:
                seen[v.name] = v
        made.add(op.out.name)
    return list(seen.values())


class ChainCode:
    """Code for a pointwise chain fused onto a tile another template already holds in registers
    (a GEMM accumulator, a reduction's output, a conv tile).

    The tile is addressed by flat offsets into the chain's contiguous output. External operands
    broadcast over the output shape; the launcher collapses dims at run time (`_collapse`) and
    passes sizes and strides, and contiguous same-shape operands skip the index arithmetic.
    """

    def __init__(self, ops: list[Op], anchor: Value, prefix: str = "e"):
        self.ops, self.anchor, self.p = ops, anchor, prefix
        self.ext = external_inputs(ops, produced={anchor.name})

    @property
    def empty(self) -> bool:
        return not self.ops

    def kernel_params(self) -> list[str]:
        """Parameters to append to the kernel signature (constexprs last is the caller's job:
        these include constexprs, so put them after the plain parameters of the kernel)."""
        p = self.p
        plain = [f"{p}_in{i}" for i in range(len(self.ext))] + [f"{p}_S1", f"{p}_S2", f"{p}_S3"]
        plain += [f"{p}_s{i}_{d}" for i in range(len(self.ext)) for d in range(4)]
        const = [f"{p}_RANK: tl.constexpr"] + [f"{p}_FULL{i}: tl.constexpr" for i in range(len(self.ext))]
        return plain + const

    def kernel_body(self, acc: str, offs: str, mask: str) -> tuple[list[str], str]:
        """Statements applying the chain to `acc`; returns (statements, result variable)."""
        p = self.p
        lines: list[str] = []
        env = {self.anchor.name: acc}
        for i, v in enumerate(self.ext):
            cast = ".to(tl.float32)" if str(v.meta.dtype) in ("torch.float16", "torch.bfloat16") else ""
            lines += [f"if {p}_FULL{i}:",
                      f"    {p}_o{i} = {offs}",
                      "else:",
                      f"    {p}_o{i} = _bcast_off({offs}, {p}_S1, {p}_S2, {p}_S3, {p}_s{i}_0, {p}_s{i}_1, "
                      f"{p}_s{i}_2, {p}_s{i}_3, {p}_RANK)",
                      f"{p}_x{i} = tl.load({p}_in{i} + {p}_o{i}, mask={mask}, other=0){cast}"]
            env[v.name] = f"{p}_x{i}"
        lines += chain_statements(self.ops, env, prefix=f"{p}t")
        return lines, env[self.ops[-1].out.name] if self.ops else acc

    def launch_prelude(self, shape_expr: str, ext_args: list[str]) -> list[str]:
        """The launcher line that defines `{p}_ops` (the operands as laid out), `{p}_args`
        (positional) and `{p}_kw` (constexprs) for the kernel call (runtime common._chain_args);
        `ext_args` are the launcher's names for the external operands, in order."""
        p, ops = self.p, ", ".join(ext_args)
        return [f"{p}_ops, {p}_args, {p}_kw = _chain_args({shape_expr}, [{ops}], {p!r})"]
