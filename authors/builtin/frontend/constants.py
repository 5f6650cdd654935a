"""Tensor constants a forward builds from Python values, remembered as the expression that built them.

`torch.arange(n) / n` or `torch.ones(4096, 64)` in a forward is run eagerly while torch.fx
traces and becomes a tensor constant of the graph. Small ones can be written into ModelNew as
literals; a large one could not (solution.py would grow with its size). While tracing, a torch
function mode records, for each tensor made by a deterministic torch call from Python values and
already-recorded tensors, an expression that rebuilds it; ModelNew's __init__ then runs that
expression (a buffer built the same way) instead of holding the numbers. Rationale: the
expression's length does not depend on the tensor's size, and it needs no values, so a capture on
the meta device (the full size) keeps these constants too.

Random and uninitialised factories are never recorded (a `torch.randn` in a forward has no
reproducible value), and an in-place change to a recorded tensor forgets its expression.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

# Factories a constant may start from: deterministic, and made from Python values alone.
_FACTORIES = {"arange", "ones", "zeros", "full", "eye", "linspace", "logspace", "tensor", "as_tensor",
              "tril_indices", "triu_indices", "ones_like", "zeros_like", "full_like"}
_RANDOM = ("rand", "normal", "bernoulli", "dropout", "multinomial", "uniform", "exponential",
           "cauchy", "geometric", "poisson", "empty")
# Operators on a recorded tensor, written as Python syntax (`{0}` the tensor, `{1}` the other side).
_DUNDERS = {"__getitem__": "{0}[{1}]", "__rsub__": "({1} - {0})", "__rdiv__": "({1} / {0})",
            "__rtruediv__": "({1} / {0})", "__radd__": "({1} + {0})", "__rmul__": "({1} * {0})",
            "__rpow__": "({1} ** {0})", "__neg__": "(-{0})", "__pos__": "(+{0})", "__abs__": "abs({0})",
            "__invert__": "(~{0})"}
# An expression longer than this is not worth a line of ModelNew: the constant is refused instead.
MAX_EXPRESSION_CHARS = 1000


class ConstantRecorder(TorchFunctionMode):
    """While active, `expr_of(t)` is the expression that rebuilt tensor `t`, where it can be."""

    def __init__(self) -> None:
        super().__init__()
        self._made: dict[int, tuple[torch.Tensor, str]] = {}  # id -> (tensor kept alive, expression)

    def expr_of(self, t: torch.Tensor) -> str | None:
        hit = self._made.get(id(t))
        return hit[1] if hit is not None and hit[0] is t else None

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        inplace = name == "__setitem__" or name.endswith("_") and not name.startswith("__") or "out" in kwargs
        if inplace and args and isinstance(args[0], torch.Tensor):  # changed in place: stale
            self._made.pop(id(args[0]), None)
        out = func(*args, **kwargs)
        if isinstance(out, torch.Tensor) and not isinstance(out, torch.nn.Parameter):
            expr = self._render_call(func, name, args, kwargs)
            if expr is not None and len(expr) <= MAX_EXPRESSION_CHARS:
                self._made[id(out)] = (out, expr)
        return out

    def _render_call(self, func: Any, name: str, args: tuple, kwargs: dict) -> str | None:
        if any(r in name for r in _RANDOM) or "generator" in kwargs:
            return None
        try:
            rendered = [self._render(a) for a in args]
            named = [f"{k}={self._render(v)}" for k, v in kwargs.items()]
        except _Unrecordable:
            return None
        if name in _DUNDERS and args and isinstance(args[0], torch.Tensor):
            return _DUNDERS[name].format(*rendered, *[""] * 2)
        if name.startswith("_"):
            return None
        # The C namespace: while tracing, capture.py stands its own wrappers in for torch's factories.
        if getattr(torch._C._VariableFunctions, name, None) is func or getattr(torch, name, None) is func:
            from_values = not any(isinstance(a, torch.Tensor) for a in [*args, *kwargs.values()])
            if from_values and name not in _FACTORIES:
                return None
            return f"torch.{name}({', '.join(rendered + named)})"
        if getattr(F, name, None) is func:
            return f"F.{name}({', '.join(rendered + named)})"
        if args and isinstance(args[0], torch.Tensor) and callable(getattr(torch.Tensor, name, None)):
            return f"{rendered[0]}.{name}({', '.join(rendered[1:] + named)})"
        return None

    def _render(self, a: Any) -> str:
        if isinstance(a, torch.Tensor):
            expr = self.expr_of(a)
            if expr is None:
                raise _Unrecordable
            return f"({expr})" if not expr.startswith("torch.") else expr
        if isinstance(a, tuple):
            inner = ", ".join(self._render(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self._render(x) for x in a) + "]"
        if isinstance(a, slice):
            return f"slice({self._render(a.start)}, {self._render(a.stop)}, {self._render(a.step)})"
        if isinstance(a, torch.dtype):
            return str(a)
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str)):
            return "..." if a is Ellipsis else repr(a)
        if isinstance(a, float):
            return f"float({str(a)!r})" if a != a or a in (float("inf"), float("-inf")) else repr(a)
        raise _Unrecordable


class _Unrecordable(Exception):
    """An argument no expression can name (a traced value, an unrecorded tensor, an object)."""
