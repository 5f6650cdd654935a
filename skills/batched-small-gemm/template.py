"""Many small matrices in one launch: the batched GEMM kernel (batch folded into the program id,
strided batch views supported) autotuned over small tiles and few warps, so a batch of 16-128
sided matrices is not mostly padding and each program has little synchronisation overhead."""

from kernelskill.authors.builtin.templates.api import GemmTemplate, tile_config

# Rationale: tl.dot needs tiles >= 16; 2 warps for 16-32 tiles, 4 for 64 (8 for 128x64: at 4
# the tf32x3 dot spills registers, ptxas sm_90); 2-3 stages suffice for short K loops.
SMALL_CONFIGS = [
    tile_config(32, 32, 32, 2, 3),
    tile_config(16, 16, 32, 1, 2),
    tile_config(16, 32, 32, 2, 3),
    tile_config(32, 16, 32, 2, 3),
    tile_config(32, 64, 32, 4, 3),
    tile_config(64, 32, 32, 4, 3),
    tile_config(64, 64, 32, 4, 3),
    tile_config(128, 64, 32, 8, 3),
]


class BatchedSmallGemm(GemmTemplate):
    default = False
    configs = SMALL_CONFIGS
    params = {}  # no variants: the precision knobs are gemm-tf32x3-strict-fp32's


TEMPLATE = BatchedSmallGemm()
