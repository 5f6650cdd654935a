"""Fused layer norm / RMS norm / L2 (and L1) normalize, with pointwise prologue and epilogue.

Rows of up to 16K elements are held in registers, one program per row (several per program when
short): statistics (two-pass over registers: exact on offset data), normalize, affine and the fused
epilogue in one read and one write of x. A reduction over a strided dim (F.normalize(dim=1), a
layer norm of a transposed view) reads [reduced x contiguous] tiles instead of copying x. Rows too
long for registers, or too few to fill the GPU, switch at run time to two-level statistics.
Its rewrite hook turns hand-written RMS norms (x * rsqrt(mean(x^2) + eps)) and L2 normalizations
(x / x.norm(dim, keepdim=True)) into norm ops first, so they get the same kernel.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    EmitContext,
    Emitted,
    Program,
    Region,
    Template,
    chains_supported,
    emit_norm,
    parse_norm,
    rewrite_manual_norms,
)


class FusedLayerRmsNorm(Template):
    kinds = ("layer_norm", "rms_norm", "normalize", "rewrite")
    supports_prologue = True
    supports_epilogue = True
    priority = 1

    def match(self, region: Region) -> bool:
        op = region.anchor
        return (op is not None and op.kind in self.kinds and parse_norm(op) is not None
                and chains_supported(region))

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_norm(region, ctx, parse_norm(region.anchor))

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return rewrite_manual_norms(program)


TEMPLATE = FusedLayerRmsNorm()
