"""Triangular matmuls: `tril/triu(A @ B)` and products whose operands the forward makes
triangular with tril/triu become one GEMM kernel that skips work known to be zero: output tiles
outside the kept triangle run an empty K loop (they still store zeros, or the epilogue of zero),
and when an operand is triangular each tile's K loop covers only the band where it is non-zero.
The diagonal tiles are masked in registers, so the separate tril pass disappears too.

Exact: only products with an operand the reference's own ops set to zero are skipped (perturbed
inputs stay covered), and every computed element sums the same products. Default on: it never
does more work than the plain GEMM plus the tril pass it replaces (1.5-2x on square shapes)."""

from kernelskill.authors.builtin.templates.api import (
    EmitContext,
    GemmTemplate,
    KernelOpts,
    Program,
    Region,
    gemm_ok,
    rewrite_triangular,
)


class TriangularMatmul(GemmTemplate):
    kinds = ("rewrite", "tri_matmul")
    default = True
    fold = False  # the triangle lives in each matrix's own (row, column) indices
    small_dim = False
    split_k = False  # per-tile K bands are not combined with K chunks (untested), so no split

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return program if rewrite_triangular(program, gemm_ok) else None

    def kernel_opts(self, region: Region, ctx: EmitContext) -> KernelOpts:
        opts = super().kernel_opts(region, ctx)
        at = region.anchor.attrs
        opts.out_tri, opts.a_tri, opts.b_tri = at.get("out_tri"), at.get("a_tri"), at.get("b_tri")
        return opts


TEMPLATE = TriangularMatmul()
