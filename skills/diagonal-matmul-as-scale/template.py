"""diag(v) @ B -> v[:, None] * B and A @ diag(v) -> A * v (diag_embed: batched v): an O(n^2)
elementwise scaling instead of an O(n^3) GEMM over a dense diagonal matrix, which is no longer
built when nothing else reads it. The product then fuses with its pointwise neighbours
(fuse-elementwise-chain). Exact: the dense product adds only exact zeros to v[i] * B[i, j]
(finite inputs). Default on: it is never slower."""

from kernelskill.authors.builtin.templates.api import EmitContext, Program, Template, rewrite_diagonal


class DiagonalMatmulAsScale(Template):
    kinds = ("rewrite",)
    default = True

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return program if rewrite_diagonal(program) else None


TEMPLATE = DiagonalMatmulAsScale()
