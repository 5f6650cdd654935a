"""`AttentionTemplate`: the attention op's match and emission (kernel, launcher, forward line) and
the rewrite hook that finds attention in a captured program (match.py)."""

from __future__ import annotations

from ...frontend.ir import Op, Program, Region
from ...runtime import ATTENTION, ATTENTION_PARTS, COLLAPSE, GEMM_PREP
from ...templates.base import EmitContext, Emitted, Template
from ..gemm.match import precision
from .kernel import render
from .kernel_parts import render_parts
from .match import rewrite_attention

_FLAGS = ("kt", "packed", "divide", "mask", "fill", "mask_first", "causal", "bthd", "weights")
# The skill's variants (ctx.params), added to the flags only when on. split_d is emitted whatever
# the head dims: the launcher splits only where that pads less (`_attn_split`), and the timed size
# may have other head dims. f16_parts (kernel_parts.py: fp16 parts replace tf32x3, so only where
# the dots would be tf32x3) is on unless a variant turns it off: on an H100 it ran 1.3-2.8x the
# tf32x3 kernel on five shapes, at lower error, and beat eager SDPA on each
# (problems/measurements/h100-2026-12-07-attention-parts/); head_major and split_d mean the same
# beside it.
_VARIANTS = ("head_major", "split_d", "f16_parts")
_ON_BY_DEFAULT = {"f16_parts"}


def attention_ok(op: Op) -> bool:
    """An `attention` op the rewrite made (its checks are the family's contract)."""
    return op.kind == "attention" and op.out.meta is not None


def emit_attention(region: Region, ctx: EmitContext) -> Emitted:
    """One fused kernel for the region's attention op, its launcher (one `_attn_parts_run` call
    where the dots would be tf32x3 and no variant turned f16_parts off, else `_attn_run`, with
    the op's form and the variants on as literal flags) and the forward line."""
    ctx.share("collapse", COLLAPSE)
    ctx.share("attention", ATTENTION)
    on = {f for f in _VARIANTS if ctx.params.get(f, f in _ON_BY_DEFAULT)}
    parts = "f16_parts" in on and precision(ctx) == "tf32x3"
    if parts:
        ctx.share("gemm_prep", GEMM_PREP)
        ctx.share("attention_parts", ATTENTION_PARTS)
    op = region.anchor
    a = op.attrs
    kname, lname = ctx.name("attention_kernel"), ctx.name("attention")
    flags = {f: a[f] for f in _FLAGS}
    flags.update({f: True for f in _VARIANTS if f in on and (f != "f16_parts" or parts)})
    run = "_attn_parts_run" if parts else "_attn_run"
    helper = "\n".join([f"def {lname}(q, k, v, m, s):",
                        f"    return {run}({kname}, q, k, v, m, s, {flags!r})"])
    ins = [v.name for v in op.inputs]
    n_qkv = 1 if a["packed"] is not None else 3
    qkv = ins[:n_qkv] * (3 // n_qkv)
    rest = ins[n_qkv:]
    mask = rest.pop(0) if a["has_mask"] else "None"
    scale = rest.pop(0) if a["has_scale"] else "None"
    line = f"{op.out.name} = {lname}({', '.join(qkv)}, {mask}, {scale})"
    kernel = render_parts(kname) if parts else render(kname, ctx)
    return Emitted(kernels=[kernel], helpers=[helper], lines=[line])


class AttentionTemplate(Template):
    """Fused attention (skills/flash-attention-tiling); its rewrite hook makes the ops it emits."""

    kinds = ("attention", "rewrite")
    priority = 1
    params = {f: [f in _ON_BY_DEFAULT, f not in _ON_BY_DEFAULT] for f in _VARIANTS}

    def match(self, region: Region) -> bool:
        op = region.anchor
        return op is not None and not region.prologue and not region.epilogue and attention_ok(op)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_attention(region, ctx)

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return rewrite_attention(program)
