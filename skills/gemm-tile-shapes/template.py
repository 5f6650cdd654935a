"""The GEMM kernel autotuned over a wider space of tile shapes, K steps, warps and stages than the
default (non-default: each configuration compiles, so the search costs start-up time). Its
variants pin one tile family (`tiles`: wide, deep, narrow) for all three kernel sets: fewer
configurations to compile and a less noisy autotuning pick among tiles of one kind."""

from kernelskill.authors.builtin.templates.api import (
    DEFAULT_CONFIGS,
    PREP16_CONFIGS,
    PREP_CONFIGS,
    EmitContext,
    GemmTemplate,
    tile_config,
)

# Rationale: the default list plus deeper pipelines (5 stages), BK = 16 (fewer registers per
# step), narrow tiles for one small dimension (N or M of 16-48) and 64-wide tiles for short
# waves. Every entry compiles for sm_90 without register spills for a plain GEMM (tf32x3 is
# register-bound: 128x256 tiles spill at any warp count and are left out); shared memory stays
# <= 164 KB.
WIDE_CONFIGS = DEFAULT_CONFIGS + [
    tile_config(128, 128, 16, 8, 5),
    tile_config(128, 128, 32, 8, 5),
    tile_config(128, 128, 16, 8, 3),
    tile_config(64, 64, 16, 4, 5),
    tile_config(64, 64, 32, 4, 3),
    tile_config(64, 128, 16, 4, 4),
    tile_config(64, 32, 32, 4, 4),
    tile_config(128, 16, 32, 4, 4),
]


# Prepared operands hold four fp32 tiles per stage, (2 BM + 2 BN) * BK * 4 bytes, within the
# H200's 227 KB of shared memory per block.
WIDE_PREP_CONFIGS = PREP_CONFIGS + [
    tile_config(128, 256, 16, 8, 4),
    tile_config(256, 128, 16, 8, 3),
    tile_config(128, 128, 16, 8, 4),
    tile_config(128, 128, 16, 8, 5),
    tile_config(64, 128, 32, 4, 4),
    tile_config(128, 64, 32, 8, 4),
]

# fp16 parts take half the bytes, (2 BM + 2 BN) * BK * 2 per stage: a 128x256x64 tile fits two
# stages (192 KB). The experiment's other tiles (tests/gpu/gemm_fp16x3.py); none won a shape there.
# BK stays 64, the parts' scale chunk (runtime/gemm_prep.py's SCALE_K).
WIDE_PREP16_CONFIGS = PREP16_CONFIGS + [
    tile_config(128, 256, 64, 8, 2),
    tile_config(128, 128, 64, 4, 3),
]

# Tile families, each (plain, TF32 parts, fp16 parts) as (BM, BN, BK, warps, stages). Every list
# starts small (the CPU interpreter runs only the first entry) and keeps the default lists' best
# (128x128x32 8 warps 3 stages; with A split in registers 128x64x32 4 warps 4 stages; fp16 parts
# 128x128x64 8 warps 3 stages), so no family is all-failing. Registers and shared memory: ptxas
# for sm_90a (no GPU; tests/authors/gemm_compile.py's method) on every kernel of the set, a plain
# GEMM: no spills unless said, <= 200 KB per block (a fused epilogue adds ~150-850 bytes of spill
# after the K loop to these and to the default lists' best alike); TF32 parts keep BK <= 32 (K is
# padded to 32), fp16 parts BK = 64 (the scale chunk).
def _family(*lists: list[tuple[int, int, int, int, int]]) -> tuple:
    return tuple([tile_config(*c) for c in cfgs] for cfgs in lists)


# wide: a 256-long side, fewer programs each reusing its loaded panels longer (large squares).
# 128x256 / 256x128 spill at any warp count; kept on fp16 parts only (184-304 bytes with row
# scales, the large outputs' kind; 640-1200 with chunk scales), the largest tiles they allow.
WIDE_TILES = _family(
    [(64, 64, 32, 4, 4), (128, 128, 32, 8, 3), (256, 64, 32, 8, 3), (256, 64, 16, 8, 4), (64, 256, 16, 8, 4)],
    [(64, 64, 32, 4, 3), (128, 64, 32, 4, 4), (128, 128, 32, 8, 3), (256, 64, 32, 8, 3), (256, 64, 16, 8, 4),
     (64, 256, 16, 8, 4)],
    [(64, 64, 64, 4, 3), (128, 128, 64, 8, 3), (256, 64, 64, 8, 2), (128, 256, 64, 8, 2),
     (256, 128, 64, 16, 2)])
# deep: more stages in flight or another K step (64 on plain dots, 16), for K loops that stall on
# loads; fp16 parts keep BK = 64, so their deeper pipelines are on 64-wide tiles.
DEEP_TILES = _family(
    [(64, 64, 64, 4, 4), (128, 128, 32, 8, 3), (128, 128, 32, 8, 6), (128, 128, 16, 8, 6),
     (128, 128, 64, 8, 3), (128, 64, 64, 8, 3), (64, 128, 64, 8, 3)],
    [(64, 64, 16, 4, 6), (128, 64, 32, 4, 4), (128, 128, 32, 8, 4), (128, 128, 16, 8, 6), (128, 64, 32, 8, 5),
     (64, 128, 32, 4, 5)],
    [(64, 64, 64, 4, 5), (128, 128, 64, 8, 3), (128, 64, 64, 8, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 6)])
# narrow: 64-wide and thinner tiles, for short waves (more programs) or one small dimension (M or N
# of 16-64, where a 128-wide tile is mostly padding).
NARROW_TILES = _family(
    [(64, 32, 32, 4, 4), (128, 128, 32, 8, 3), (128, 64, 32, 8, 4), (64, 128, 32, 8, 4), (128, 32, 32, 4, 4),
     (32, 128, 32, 4, 4), (64, 64, 32, 4, 3)],
    [(64, 32, 32, 4, 4), (128, 64, 32, 4, 4), (128, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4),
     (64, 64, 32, 4, 4)],
    [(64, 32, 64, 4, 4), (128, 128, 64, 8, 3), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 32, 64, 4, 4),
     (64, 64, 64, 4, 4)])
FAMILIES = {"wide": WIDE_TILES, "deep": DEEP_TILES, "narrow": NARROW_TILES}


class GemmTileShapes(GemmTemplate):
    default = False
    configs = WIDE_CONFIGS
    prep_configs = WIDE_PREP_CONFIGS
    prep16_configs = WIDE_PREP16_CONFIGS
    params = {"tiles": list(FAMILIES)}

    def tile_lists(self, ctx: EmitContext) -> tuple[list, list, list]:
        """The pinned family's lists; without one (the default variant) the whole wide space."""
        return FAMILIES.get(self.own(ctx).get("tiles"), super().tile_lists(ctx))


TEMPLATE = GemmTileShapes()
