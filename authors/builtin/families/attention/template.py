"""`AttentionTemplate`: the attention op's match and emission (kernel, launcher, forward line) and
the rewrite hook that finds attention in a captured program (match.py)."""

from __future__ import annotations

from ...frontend.ir import Op, Program, Region
from ...runtime import ATTENTION, COLLAPSE
from ...templates.base import EmitContext, Emitted, Template
from .kernel import render
from .match import rewrite_attention

_FLAGS = ("kt", "packed", "divide", "mask", "fill", "mask_first", "causal", "bthd", "weights")
# The skill's variants (ctx.params), added to the flags only when on, so that the default emits
# the launch call it always did. split_d is emitted whatever the head dims: the launcher splits
# only where that pads less (`_attn_split`), and the timed size may have other head dims.
_VARIANTS = ("head_major", "split_d")


def attention_ok(op: Op) -> bool:
    """An `attention` op the rewrite made (its checks are the family's contract)."""
    return op.kind == "attention" and op.out.meta is not None


def emit_attention(region: Region, ctx: EmitContext) -> Emitted:
    """One fused kernel for the region's attention op, its launcher (one `_attn_run` call with the
    op's form and the variants on in `ctx.params` as literal flags) and the forward line."""
    ctx.share("collapse", COLLAPSE)
    ctx.share("attention", ATTENTION)
    op = region.anchor
    a = op.attrs
    kname, lname = ctx.name("attention_kernel"), ctx.name("attention")
    flags = {f: a[f] for f in _FLAGS}
    flags.update({f: True for f in _VARIANTS if ctx.params.get(f, False)})
    helper = "\n".join([f"def {lname}(q, k, v, m, s):",
                        f"    return _attn_run({kname}, q, k, v, m, s, {flags!r})"])
    ins = [v.name for v in op.inputs]
    n_qkv = 1 if a["packed"] is not None else 3
    qkv = ins[:n_qkv] * (3 // n_qkv)
    rest = ins[n_qkv:]
    mask = rest.pop(0) if a["has_mask"] else "None"
    scale = rest.pop(0) if a["has_scale"] else "None"
    line = f"{op.out.name} = {lname}({', '.join(qkv)}, {mask}, {scale})"
    return Emitted(kernels=[render(kname, ctx)], helpers=[helper], lines=[line])


class AttentionTemplate(Template):
    """Fused attention (skills/flash-attention-tiling); its rewrite hook makes the ops it emits."""

    kinds = ("attention", "rewrite")
    priority = 1
    params = {f: [False, True] for f in _VARIANTS}

    def match(self, region: Region) -> bool:
        op = region.anchor
        return op is not None and not region.prologue and not region.epilogue and attention_ok(op)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_attention(region, ctx)

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return rewrite_attention(program)
