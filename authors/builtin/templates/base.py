"""The interface between the built-in author and executable skill templates.

A skill folder may hold `template.py` defining `TEMPLATE = SomeTemplate()`. A template claims
op kinds (`kinds`), says whether it can fuse pointwise prologues / epilogues, checks a concrete
region (`match`), and emits Triton kernels, launcher functions and the forward's lines
(`emit`). Generated code must be standalone: only torch, triton and math, no kernelskill import.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..frontend.ir import Program, Region, Value


@dataclass
class Emitted:
    kernels: list[str] = field(default_factory=list)
    """Source of @triton.jit kernels (and @triton.autotune decorators)."""
    helpers: list[str] = field(default_factory=list)
    """Source of plain Python launcher functions."""
    lines: list[str] = field(default_factory=list)
    """Forward statements; they must assign every value in `region.outputs` by its name."""


@dataclass
class EmitContext:
    params: dict[str, Any] = field(default_factory=dict)
    """Parameters the planner chose for this template (block sizes, warps, variants)."""
    matmul_tf32: bool = False
    """The precision policy lets matmul-class work run one-pass TF32 (the `tf32` policy)."""
    conv_tf32: bool = False
    """The policy lets cuDNN convolutions run one-pass TF32, as eager's do (`default`, `tf32`); our
    own Triton dots follow `matmul_tf32` (the static checks cannot tell a conv's dot from a GEMM's)."""
    _ids: itertools.count = field(default_factory=itertools.count)
    shared: dict[str, str] = field(default_factory=dict)
    """Helper sources shared across regions, emitted once (key -> source)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Kernel / launcher names dropped as duplicates at assembly -> the name kept in their place."""

    def name(self, stem: str) -> str:
        """A fresh identifier for a kernel or launcher in the generated file."""
        return f"_{stem}_{next(self._ids)}"

    def share(self, key: str, source: str) -> None:
        self.shared.setdefault(key, source)


class Template:
    """Base class: override `kinds`, `match` and `emit`."""

    id: str = ""
    """Set by the loader to the skill folder's name."""
    kinds: tuple[str, ...] = ()
    """Op kinds this template can anchor ('pointwise' for elementwise chains)."""
    supports_prologue: bool = False
    supports_epilogue: bool = False
    default: bool = True
    """Used by the generator's first candidate; non-default templates run when a skill asks."""
    priority: int = 0
    """Among matching templates of a candidate, the highest priority wins."""
    params: dict[str, list[Any]] = {}
    """Tunable parameters and their candidate values (the planner may pick one)."""
    runtime_scalars: bool = False
    """Fuses pointwise ops whose operand is a Python number known only at run time (pointwise.py
    `is_runtime_scalar`), passing it as a kernel argument; other templates never see such ops."""
    graph_replay: str | None = None
    """A program template (by id) that wraps every candidate using this one: set by templates
    whose regions cost several host launches each, so that their forwards replay as one graph."""

    def match(self, region: Region) -> bool:
        return region.anchor is not None and region.anchor.kind in self.kinds

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        raise NotImplementedError

    # Program-level hooks. A template whose kinds include "rewrite" may transform the captured
    # program before partitioning (algebraic rewrites: it must keep the program equivalent and
    # may replace ops with new ones of its own kinds); one whose kinds include "program" may
    # transform the assembled candidate source (whole-forward strategies such as CUDA-graph
    # replay). Both return None when they do not apply.
    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return None

    def wrap(self, source: str, ctx: EmitContext) -> str | None:
        return None


def out_names(region: Region) -> list[str]:
    return [v.name for v in region.outputs]


def tensor_arg(v: Value) -> str:
    """How generated forward code refers to a value (parameters are `self.<path>`)."""
    return v.name
