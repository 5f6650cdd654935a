"""The GEMM kernel autotuned over a wider space of tile shapes, K steps, warps and stages than the
default (non-default: each configuration compiles, so the search costs start-up time)."""

from kernelskill.authors.builtin.templates.api import (
    DEFAULT_CONFIGS,
    PREP16_CONFIGS,
    PREP_CONFIGS,
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


class GemmTileShapes(GemmTemplate):
    default = False
    configs = WIDE_CONFIGS
    prep_configs = WIDE_PREP_CONFIGS
    prep16_configs = WIDE_PREP16_CONFIGS


TEMPLATE = GemmTileShapes()
