"""Prefix products (and other associative combines) in one pass with `tl.associative_scan`.

`torch.cumprod` is a scan with the combine `a * b`: the block scan is `tl.cumprod` (an
associative scan with a multiply combine), the carry across blocks and chunks is a product
(`tl.reduce` with the same combine), and the identity that pads masked lanes is 1. Everything
else (orientation, chunking, fused prologue / epilogue, one read and one write) is the block
scan of families/scan/codegen. Products of signed factors keep their sign; rounding differs from a
sequential product only by the tree order (relative error ~ log2(N) ulp per element).
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    COMBINES,
    EmitContext,
    Emitted,
    Region,
    Template,
    emit_scan,
    scan_dim,
    scan_region_ok,
)


class AssociativeScan(Template):
    kinds = tuple(k for k in COMBINES if k != "cumsum")  # cumsum is single-pass-block-scan's
    supports_prologue = True
    supports_epilogue = True
    params = {"split": ["auto", "always", "never"]}

    def match(self, region: Region) -> bool:
        a = region.anchor
        return a is not None and a.kind in self.kinds and scan_region_ok(
            region, scan_dim(a.inputs[0], a.attrs.get("dim")) if a.inputs else None)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        a = region.anchor
        return emit_scan(region, ctx, a.kind, scan_dim(a.inputs[0], a.attrs["dim"]))


TEMPLATE = AssociativeScan()
