"""Template classes of the reduction family; skills/<id>/template.py files instantiate them with
their own kinds, defaults and parameters (the skill folder's name is the template id)."""

from __future__ import annotations

import re

import torch

from ...frontend.ir import Op, Region, Value
from ...runtime import LOSSES_RUNTIME
from ...templates.base import EmitContext, Emitted, Template
from ..pointwise.codegen import external_inputs
from .codegen import DEFAULTS, RedSpec, emit_reduction
from .losses import (
    cosine_embedding_ok,
    cosine_embedding_spec,
    cosine_ok,
    cosine_spec,
    cross_entropy_ok,
    cross_entropy_spec,
    elementwise_loss_ok,
    elementwise_loss_spec,
)
from .reducers import INDEX_KINDS, REDUCTION_KINDS, reduction_of
from .softmax import emit_softmax


def tile_operands(region: Region, tile_inputs: list[Value]) -> list[Value]:
    """Operands loaded over the reduced space: the prologue's external inputs (it computes the
    anchor's first input) and the anchor's other tile inputs, each once."""
    ops: list[Value] = list(external_inputs(region.prologue)) if region.prologue else [tile_inputs[0]]
    for v in tile_inputs[1:]:
        if v.name not in {o.name for o in ops}:
            ops.append(v)
    return ops


def _prologue_reads(region: Region, v: Value) -> bool:
    return bool(region.prologue) and v.name in {e.name for e in external_inputs(region.prologue)}


def chains_ok(region: Region) -> bool:
    """Prologue / epilogue ops read float tensors and constants only (ChainCode / loads handle
    those), and an epilogue needs a tensor-valued anchor output."""
    a = region.anchor
    if region.epilogue and (a.out.meta is None or not a.out.meta.dtype.is_floating_point):
        return False
    for op in [*region.prologue, *region.epilogue]:
        for v in op.inputs:
            if v.is_tensor and not (v.meta.dtype.is_floating_point or v.meta.dtype == torch.bool):
                return False
    return True


def out_dtype(region: Region) -> str:
    v = region.epilogue[-1].out if region.epilogue else region.anchor.out
    return str(v.meta.dtype)


def finish(region: Region, spec: RedSpec, ctx: EmitContext, stem: str) -> Emitted:
    em = emit_reduction(spec, ctx, stem)
    lname = re.search(r"^def (\w+)\(", em.helpers[-1], re.M).group(1)  # the launcher, after its plan cache
    ext = [v.name for v in spec.operands]
    if spec.epilogue:
        ext += [v.name for v in external_inputs(spec.epilogue, produced={spec.anchor_out.name})]
    em.lines = [f"{region.output().name} = {lname}({', '.join(ext)})"]
    return em


def trailing(region: Region) -> bool:
    """The reduced dims are the innermost dims of the anchor's input (rows, in the logical order)."""
    rd = reduced_dims(region)
    return rd is not None and rd[0] == list(range(rd[1] - len(rd[0]), rd[1]))


def whole_tensor(region: Region) -> bool:
    """The anchor reduces every element to one value (full reductions, scalar losses)."""
    a = region.anchor
    if a.kind in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"):
        return True
    rd = reduced_dims(region)
    return rd is not None and rd[0] == list(range(rd[1]))


class ReductionTemplate(Template):
    """sum / mean / prod / amax / amin / max / min / argmax / argmin / logsumexp / var / std / norm
    over any dims, with pointwise prologue and epilogue fused."""

    kinds = REDUCTION_KINDS
    supports_prologue = True
    supports_epilogue = True
    params = {"tile": [4096, 2048, 8192], "kmax": [4096, 2048, 8192], "imax": [128, 64, 256]}
    overrides: dict = {}
    """Parameters this variant fixes (merged under the planner's)."""

    def match(self, region: Region) -> bool:
        a = region.anchor
        if a is None or a.kind not in self.kinds or reduction_of(a) is None:
            return False
        return chains_ok(region)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        a = region.anchor
        red, dims = reduction_of(a)
        index = a.kind in INDEX_KINDS and (a.kind in ("argmax", "argmin") or a.attrs.get("dim") is not None)
        if a.kind in ("argmax", "argmin"):
            dtypes = ["torch.int64"]
        elif index:
            dtypes = [str(a.inputs[0].meta.dtype), "torch.int64"]
        else:
            dtypes = [out_dtype(region)]
        keepdim = bool(a.attrs.get("keepdim", False))
        spec = RedSpec(operands=tile_operands(region, [a.inputs[0]]), dims=dims, keepdim=keepdim, reducer=red,
                       vals=[a.inputs[0].name], prologue=list(region.prologue),
                       epilogue=list(region.epilogue),
                       anchor_out=a.out, out_dtypes=dtypes,
                       tuple_type=a.kind if index and a.kind in ("max", "min") else None)
        ctx.params = {**{k: v for k, v in self.overrides.items()}, **ctx.params}
        return finish(region, spec, ctx, "red")


class LossTemplate(Template):
    """Losses as reductions: elementwise losses to a scalar ('mean' / 'sum' / 'batchmean'), cross
    entropy, cosine similarity and the cosine embedding loss per row (then 'mean' / 'sum' over
    rows)."""

    kinds: tuple[str, ...] = ()
    supports_prologue = True
    supports_epilogue = True
    params = {"tile": [4096, 2048, 8192], "waves": [4, 8]}
    overrides: dict = {}

    def match(self, region: Region) -> bool:
        a = region.anchor
        if a is None or a.kind not in self.kinds or not chains_ok(region):
            return False
        # Targets and labels are loaded once per row, so the prologue must not read them.
        if a.kind == "cross_entropy":
            return cross_entropy_ok(region) and not _prologue_reads(region, a.inputs[1])
        if a.kind == "cosine_similarity":
            return cosine_ok(region)
        if a.kind == "cosine_embedding_loss":
            return cosine_embedding_ok(region) and not _prologue_reads(region, a.inputs[2])
        return elementwise_loss_ok(region)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        a = region.anchor
        operands = tile_operands(region, list(a.inputs[:3 if a.kind == "cosine_embedding_loss" else 2]))
        if a.kind == "cross_entropy":
            spec = cross_entropy_spec(region, operands)
        elif a.kind == "cosine_embedding_loss":
            spec = cosine_embedding_spec(region, operands)
        elif a.kind == "cosine_similarity":
            spec = cosine_spec(region, operands)
        else:
            spec = elementwise_loss_spec(region, operands)
        ctx.params = {**self.overrides, **ctx.params}
        em = finish(region, spec, ctx, "loss")
        if a.kind == "cross_entropy":
            ctx.share("reductions_losses", LOSSES_RUNTIME)  # after the runtime it builds on
        return em


class SoftmaxTemplate(Template):
    """softmax / log_softmax over any dim, pointwise prologue and epilogue fused."""

    kinds = ("softmax", "log_softmax")
    supports_prologue = True
    supports_epilogue = True
    params = {"single": [32768, 16384, 8192], "tile": [4096, 2048, 8192], "kmax": [4096, 2048, 8192]}
    overrides: dict = {}

    def match(self, region: Region) -> bool:
        a = region.anchor
        if a is None or a.kind not in self.kinds or len(a.tensor_inputs()) != 1:
            return False
        x, d = a.inputs[0], a.attrs.get("dim")
        if not x.is_tensor or x.meta.rank == 0 or not isinstance(d, int):
            return False
        if not -x.meta.rank <= d < x.meta.rank:
            return False
        if a.out.meta is None or not x.meta.dtype.is_floating_point or a.attrs.get("dtype") is not None:
            return False
        if set(a.attrs) - {"dim", "_stacklevel", "dtype"}:
            return False
        if not isinstance(a.attrs.get("_stacklevel", 3), int):
            return False
        return chains_ok(region)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        a = region.anchor
        ctx.params = {**self.overrides, **ctx.params}
        x = a.inputs[0]
        return emit_softmax(region, ctx, tile_operands(region, [x]), a.attrs["dim"] % x.meta.rank,
                            a.kind == "log_softmax")


def reduced_dims(region: Region) -> tuple[list[int], int] | None:
    """(reduced dims, rank) of a reduction / softmax / per-row loss anchor, from its attrs."""
    a = region.anchor
    if a.kind in REDUCTION_KINDS:
        r = reduction_of(a)
        return (r[1], a.inputs[0].meta.rank) if r else None
    if a.kind in ("softmax", "log_softmax"):
        rank = a.inputs[0].meta.rank
        return [a.attrs["dim"] % rank], rank
    return None


class VariantTemplate(Template):
    """A parameter preset of the family's templates for a structure the planner diagnosed (few
    long rows, many short rows, strided columns, whole-tensor scalars): it claims what its
    delegates claim, restricted by `applies`, and emits with `overrides` under the planner's
    parameters."""

    default = False
    priority = 1
    supports_prologue = True
    supports_epilogue = True

    def __init__(self, delegates: list[Template], overrides: dict, params: dict | None = None,
                 applies=None):  # noqa: ANN001
        self.delegates, self.overrides, self.applies = delegates, overrides, applies
        self.kinds = tuple(k for d in delegates for k in d.kinds)
        self.params = params or {k: [v] for k, v in overrides.items() if k != "warps"}

    def _delegate(self, region: Region) -> Template | None:
        a = region.anchor
        for d in self.delegates:
            if a is not None and a.kind in d.kinds and d.match(region):
                return d
        return None

    def match(self, region: Region) -> bool:
        d = self._delegate(region)
        return d is not None and (self.applies is None or bool(self.applies(region)))

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.params = {**self.overrides, **ctx.params}
        return self._delegate(region).emit(region, ctx)


class IndexReductionTemplate(ReductionTemplate):
    """argmax / argmin, and max / min with a dim (values and indices), in one pass: per-lane
    (value, first index) pairs, NaN counted as the extreme, ties to the first index."""

    kinds = ("argmax", "argmin", "max", "min")
    priority = 1

    def match(self, region: Region) -> bool:
        a = region.anchor
        return super().match(region) and (a.kind in ("argmax", "argmin") or a.attrs.get("dim") is not None)


__all__ = ["DEFAULTS", "IndexReductionTemplate", "LossTemplate", "Op", "ReductionTemplate", "SoftmaxTemplate",
           "VariantTemplate", "finish", "reduced_dims", "tile_operands", "trailing", "whole_tensor"]
