"""Symmetric products X @ X^T and X^T @ X (the same X, transposed by the forward itself): the
output is symmetric by construction, so only tiles on and below the diagonal run their K loop and
each is stored twice (as computed, and transposed into the mirrored tile). About half the FLOPs
of the GEMM (SYRK); the fused epilogue is applied to both stores.

Exact math (C[j, i] and C[i, j] are the same sum), and the structure comes from the reference's
ops, never from input values. Non-default until measured: the mirrored store is a transposed
tile write and the upper-triangle programs exit at once."""

from kernelskill.authors.builtin.templates.api import (
    EmitContext,
    GemmTemplate,
    KernelOpts,
    Program,
    Region,
    gemm_ok,
    rewrite_symmetric,
    tile_config,
)

# Square tiles only: tile (m, n) mirrors onto tile (n, m).
SQUARE_CONFIGS = [
    tile_config(64, 64, 32, 4, 4),
    tile_config(128, 128, 32, 8, 3),
    tile_config(128, 128, 16, 8, 4),
    tile_config(64, 64, 32, 4, 3, group=16),
]


class SymmetricMatmul(GemmTemplate):
    kinds = ("rewrite", "syrk")
    default = False
    fold = False
    small_dim = False
    split_k = False  # the mirrored store addresses the output itself, not a split-K partial
    configs = SQUARE_CONFIGS

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return program if rewrite_symmetric(program, gemm_ok) else None

    def kernel_opts(self, region: Region, ctx: EmitContext) -> KernelOpts:
        opts = super().kernel_opts(region, ctx)
        opts.mirror = True
        return opts

    def config_list(self, ctx: EmitContext) -> list[tuple[dict, int, int]]:
        return self.configs  # tile shapes are not the planner's to change here


TEMPLATE = SymmetricMatmul()
