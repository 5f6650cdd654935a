"""The built-in author's intermediate representation: values, ops, regions, program.

A captured forward becomes a list of `Op`s in topological order. Every op can always be
emitted as plain PyTorch (`Op.torch_expr`), so a region no template claims still runs; the
fusion pass groups ops into `Region`s, and templates (skills/<id>/template.py) turn a region
into Triton kernels plus a launcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: torch.dtype
    stride: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        expect = 1
        for size, st in zip(reversed(self.shape), reversed(self.stride), strict=True):
            if size != 1 and st != expect:
                return False
            expect *= size
        return True


@dataclass
class Value:
    """A value in the forward: a tensor (meta set), or a Python constant (const set)."""

    name: str
    meta: TensorMeta | None = None
    const: Any = None
    is_param: bool = False  # a parameter or buffer: `self.<path>` in generated code

    @property
    def is_tensor(self) -> bool:
        return self.meta is not None


@dataclass
class Op:
    kind: str
    """Canonical op name: 'relu', 'add', 'linear', 'conv', 'softmax', 'sum', 'view', 'torch'..."""
    inputs: list[Value]
    out: Value
    attrs: dict[str, Any] = field(default_factory=dict)
    torch_expr: str = ""
    """A Python expression computing the op with PyTorch from the input names (the fallback)."""
    outs: list[Value] = field(default_factory=list)
    """Extra outputs for multi-output ops (e.g. max with dim -> values, indices)."""

    def tensor_inputs(self) -> list[Value]:
        return [v for v in self.inputs if v.is_tensor]


@dataclass
class Region:
    """A group of ops that one template emits together (one or a few kernels)."""

    kind: str
    """'pointwise', 'reduction', 'gemm', 'conv', 'norm', 'softmax', 'scan', 'pool', 'loss', 'torch'..."""
    ops: list[Op]
    anchor: Op | None = None
    """The op that defines the region's shape of work (a GEMM, a reduction, ...)."""
    prologue: list[Op] = field(default_factory=list)
    """Pointwise ops fused before the anchor (on its main input)."""
    epilogue: list[Op] = field(default_factory=list)
    """Pointwise ops fused after the anchor (on its output)."""
    template: str | None = None
    """Id of the template chosen for this region (None: emitted as PyTorch)."""
    outputs: list[Value] = field(default_factory=list)
    """Values this region produces that later code (or the forward's return) reads."""

    def all_ops(self) -> list[Op]:
        return [*self.prologue, *([self.anchor] if self.anchor else []), *self.ops, *self.epilogue]

    def output(self) -> Value:
        ops = self.all_ops()
        return ops[-1].out


def leaves(out: Any) -> list[Value]:
    """The Values at the leaves of a forward's return structure (a Value, or nested lists and
    tuples of them), in order."""
    if isinstance(out, Value):
        return [out]
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in leaves(o)]
    return []


@dataclass
class Program:
    """A captured forward: its inputs (forward arguments), ops and outputs."""

    inputs: list[Value]
    ops: list[Op]
    outputs: Any
    """The forward's return structure with Values at the leaves (tuple/list/single)."""
    init_source: str = ""
    """The reference Model.__init__ (renamed), reused so parameters are created identically."""
    forward_args: list[str] = field(default_factory=list)
    forward_signature: str = ""
    """The reference forward's parameters as written (`self, x, scale=0.5`); empty: self + forward_args."""
    constants: dict[str, str] = field(default_factory=dict)
    """Tensors the tracer made (attribute name -> expression), registered as non-persistent
    buffers after the reference's __init__ so they follow `.to(device)` and leave seeding alone."""
    values: dict[str, Value] = field(default_factory=dict)

    def users(self) -> dict[str, list[Op]]:
        """Value name -> ops that read it."""
        out: dict[str, list[Op]] = {}
        for op in self.ops:
            for v in op.inputs:
                out.setdefault(v.name, []).append(op)
        return out


@dataclass
class Segment:
    """A straight-line region of a forward torch.fx could not trace whole, captured on its own."""

    program: Program
    """The region as a program: its inputs are the forward's variables it reads, its outputs the
    variables it assigns that later code reads (or the value it returns)."""
    statements: str
    """The region's statements as written: they run when the guard fails."""
    guard: list[tuple[str, Any]]
    """(variable, what it held while capturing): a TensorMeta; `float` or `int`, a number read at
    run time; or a plain value the program baked in. The region's kernels run only when every
    variable matches."""
    assigns: list[str] = field(default_factory=list)
    """Variables the region leaves set, in the order of the program's output tuple."""
    returns: bool = False
    """The region ends the forward with a `return`: its program's outputs are the return value."""


@dataclass
class PartialForward:
    """A forward split around what torch.fx cannot trace (a branch on a tensor's value, `.item()`
    feeding Python): the forward as written, with each captured region replaced by the marker
    statement `__segment_<i>__` (segments[i])."""

    forward: str
    segments: list[Segment]
