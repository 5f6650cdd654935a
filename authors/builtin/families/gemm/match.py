"""What the GEMM family matches (kinds, ranks, fp32 dtypes, fusable epilogues) and the tile
configurations its kernels are tuned over, with the measurements behind them."""

from __future__ import annotations

from ...frontend.ir import Op, Value
from ...templates.base import EmitContext
from ..pointwise.codegen import external_inputs

F32 = "torch.float32"
FLOATS = {"torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"}


def tile_config(bm: int, bn: int, bk: int, warps: int, stages: int, group: int = 8) -> tuple[dict, int, int]:
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group), warps, stages


Configs = list[tuple[dict, int, int]]
TileLists = tuple[Configs, Configs, Configs]
"""A kernel set's tile configurations: (plain, prepared TF32 parts, prepared fp16 parts)."""


# Rationale (H200: 132 SMs, 227 KB shared memory per block, 64K registers per SM): a tf32x3 dot
# splits each operand into TF32 big and small parts and runs three tensor-core products, so the
# kernel is register-bound: compiled for sm_90 (ptxas, no GPU), 128x128 tiles fit 8 warps at
# <= 255 registers without spills (4 warps spill ~900 bytes), and 128x256 / 256x128 spill at
# any warp count, so the list stops at 128x128. fp32 stages cost (BM + BN) * BK * 4 bytes: 3-4
# stages of 128x128x32 (96-128 KB) hide DRAM latency. 128x64 / 64x128 / 256x64 suit skinny
# shapes and short waves; 64x64 small problems. All use wgmma (warp-group MMA). The first entry
# is also the only one under the CPU interpreter.
DEFAULT_CONFIGS = [
    tile_config(64, 64, 32, 4, 4),
    tile_config(128, 128, 32, 8, 3),
    tile_config(128, 128, 32, 8, 4),
    tile_config(128, 128, 16, 8, 4),
    tile_config(128, 64, 32, 8, 4),
    tile_config(64, 128, 32, 8, 4),
    tile_config(256, 64, 16, 8, 4),
    tile_config(128, 64, 16, 4, 4),
]


# Prepared operands (gemm_prep.py): four fp32 tiles per stage, (2 BM + 2 BN) * BK * 4 bytes, so
# 128x128x32 fits 3 stages (192 KB). Measured on an H200 (three TF32 dots per step into a fresh
# accumulator, problems/measurements/h200-2026-11-30-gemm/): 128x128x32 at 8 warps, 3 stages was
# the best of four tiles on all six shapes with both operands prepared, and 128x64x32 at 4 warps,
# 4 stages with A split in registers; 128x256x16 and 128x128x32 at 4 warps were 1.1-2.7x slower and
# spill registers (ptxas, sm_90a: tests/authors/gemm_compile.py), so they are not tuned over: a
# noisy autotuning pick among them would cost that much. 64x64 covers small problems.
PREP_CONFIGS = [
    tile_config(64, 64, 32, 4, 3),
    tile_config(128, 128, 32, 8, 3),
    tile_config(128, 64, 32, 4, 4),
]

# Both operands prepared as fp16 parts: (2 BM + 2 BN) * BK * 2 bytes per stage, so BK = 64 at
# 128x128 fits 3 stages (192 KB). Measured on an H200 (tests/gpu/gemm_fp16x3.py, six shapes):
# 128x128x64 at 8 warps, 3 stages was the best of six tiles on four, 64x64x64 on the small-output,
# long-K one (640 x 896 x 50000) and 128x64x64 at 4 warps on the 48-wide one.
PREP16_CONFIGS = [
    tile_config(64, 64, 64, 4, 3),
    tile_config(128, 128, 64, 8, 3),
    tile_config(128, 64, 64, 4, 4),
]

F16_SCALES = ("auto", "row", "chunk")
"""Scales of fp16 operand parts: by output size (runtime/gemm.py's _GEMM_ROW_MIN), per row over all
of K, or per row and K chunk."""


def is_f32(v: Value) -> bool:
    return v.meta is not None and str(v.meta.dtype) == F32


def gemm_ok(op: Op, rank1: bool = False) -> bool:
    """A linear / matmul / bmm on fp32 tensors whose form we implement."""
    t = op.tensor_inputs()
    if not is_f32(op.out) or len(t) < 2 or not all(is_f32(v) for v in t):
        return False
    a, b = op.inputs[0], op.inputs[1]
    if not (a.is_tensor and b.is_tensor):
        return False
    ra, rb = a.meta.rank, b.meta.rank
    if op.kind == "linear":
        bias = op.attrs.get("bias")
        if bias is not None and (len(op.inputs) < 3 or not op.inputs[2].is_tensor
                                 or op.inputs[2].meta.rank != 1):
            return False
        if len(op.inputs) > (3 if bias is not None else 2):
            return False
        return rb == 2 and (ra >= 2 or (rank1 and ra == 1))
    if len(op.inputs) != 2:
        return False
    if op.kind == "bmm":
        return ra == 3 and rb == 3
    if op.kind in ("matmul", "tri_matmul", "syrk"):
        if ra == 1 and rb == 1:
            return False
        return min(ra, rb) >= 2 or rank1
    return False


def chain_ok(ops: list[Op], max_ext: int = 8) -> bool:
    """A fusable epilogue: float outputs and operands, few external operands (each costs kernel
    parameters and a load per output element)."""
    ext = external_inputs(ops)
    return all(o.out.meta is not None and str(o.out.meta.dtype) in FLOATS for o in ops) and \
        len(ext) <= max_ext and all(str(v.meta.dtype) in FLOATS for v in ext)


def precision(ctx: EmitContext, tf32: bool = False, params: dict | None = None) -> str:
    """tl.dot input_precision: one-pass TF32 only when the policy allows it and the template asks;
    otherwise fp32-accurate tf32x3 (or "ieee" when the planner picks it: `params`, by default the
    variant's ctx.params)."""
    if tf32 and ctx.matmul_tf32:
        return "tf32"
    p = (ctx.params if params is None else params).get("input_precision", "tf32x3")
    return p if p in ("tf32x3", "ieee") else "tf32x3"


# Matrix-vector shapes: M or N <= runtime/gemm.py's _GEMM_SMALL_DIM. A tensor-core tile would be
# >= 16 wide and mostly padding; a CUDA-core kernel that multiplies a [BM, BK] tile of the large
# operand by the [BK, small] other one and reduces over BK each step streams the large operand
# once, at close to DRAM bandwidth, with BK along its contiguous K (16-byte loads) and 8-32 KB per
# step in flight per program. Rationale (compiled for sm_90 with ptxas, no GPU): 32-120 registers at a
# small dimension of 1, up to 255 without spills at 8; keeping a [BM, BK, BN] accumulator instead
# spilled.
GEMV_CONFIGS = [  # BLOCK_N = next_power_of_2(small dim) comes from the launcher
    (dict(BLOCK_M=16, BLOCK_K=128, GROUP_M=1), 4, 2),
    (dict(BLOCK_M=8, BLOCK_K=256, GROUP_M=1), 4, 2),
    (dict(BLOCK_M=4, BLOCK_K=512, GROUP_M=1), 4, 2),
    (dict(BLOCK_M=32, BLOCK_K=64, GROUP_M=1), 4, 2),
    (dict(BLOCK_M=32, BLOCK_K=128, GROUP_M=1), 8, 2),
]
