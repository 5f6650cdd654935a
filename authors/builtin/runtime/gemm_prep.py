"""Operand preparation for tensor-core GEMMs, shared by every GEMM region of a generated file.

Before a large GEMM the launcher copies each operand once with K contiguous and zero-padded to a
multiple of 32, and under strict fp32 splits it into `hi` and `lo` parts on the way
(x = hi + lo + O(2^-22 |x|)). The GEMM kernel then runs three plain tensor-core dots per K step,
hi*lo + lo*hi + hi*hi, into a fresh accumulator added to the fp32 running sum: fp32-class
accuracy (EVALUATION.md's error-compensated rule).

With both operands prepared the parts are fp16: each row's 64-wide K chunk is first scaled by a
power of two 2^(14 - e) (2^e <= the chunk's max |x| < 2^(e + 1), found in the same pass) so that
hi = fp16(x s) and lo = fp16(x s - hi) carry 11 + 11 significant bits, as TF32 parts do, and every
product hi*hi, hi*lo is exact in the fp32 accumulator; per K step the kernel multiplies its
products by the chunk's inverse row and column scales (exact powers of two). On large outputs the
launcher scales whole rows instead (mode 3, bounds from one extra read; the kernel undoes them once
after its K loop: runtime/gemm.py's _GEMM_ROW_MIN). fp16 tensor cores run
at twice TF32's rate and the parts take half the bytes. Elements more than ~2^24 below their
chunk's largest lose bits in fp16's subnormals: an absolute error of at most ~2^-38 of that largest
each, far below fp32 rounding of the dot products they enter. Measured on an H200 against TF32
parts (tests/gpu/gemm_fp16x3.py, one scale per operand there; both operands prepared, best of the
tile lists; error = max |C - C64| / (|C64| + 1), randn inputs; gemm_fp16x3.txt):

| shape M x N x K    | cuBLAS fp32     | TF32 parts      | fp16 parts      |
|--------------------|----------------:|----------------:|----------------:|
| 3840 x 3840 x 3840 | 2.41 ms, 2.0e-4 | 1.17 ms, 5.3e-5 | 0.80 ms, 4.4e-5 |
| 3001 x 2711 x 4093 | 1.43 ms, 2.5e-4 | 1.71 ms, 5.0e-5 | 1.25 ms, 4.2e-5 |
| 2048 x 2816 x 6144 | 1.45 ms, 3.2e-4 | 0.83 ms, 7.1e-5 | 0.61 ms, 5.8e-5 |
| 8000 x 1536 x 2304 | 1.17 ms, 1.7e-4 | 0.64 ms, 3.1e-5 | 0.50 ms, 2.6e-5 |

On rows spread over six decades, with one scale for the whole operand, its error stayed below
cuBLAS's on five of six shapes and was 1.24x cuBLAS's on the sixth (640 x 896 x 50000); the product
scales each row's chunk on its own, which leaves no row far below its scale. The one-side
paths below keep TF32 parts: at 409600 x 48 x 1280, splitting A into fp16 in registers ran 2.18 ms
against 0.76 ms for the TF32 split (gemm_prepared_mode3.txt).

Why a separate pass: Triton's in-kernel `tf32x3` re-splits every tile in registers on every K
step, and wgmma reads fp32 / TF32 operands from shared memory only K-major, so a row-major
[K, N] right operand (a plain `a @ b`) takes a slower path. Measured on an H200 (torch 2.11,
triton 3.6, median of do_bench with L2 flushed; split time included; max |error| vs float64;
tests/gpu/gemm_*.py, outputs in problems/measurements/h200-2026-11-30-gemm/):

| shape M x N x K          | cuBLAS fp32 | in-kernel tf32x3 | prepared 3xTF32 | error: torch / ours |
|--------------------------|------------:|-----------------:|----------------:|--------------------:|
| 3840 x 3840 x 3840       | 2.41 ms     | 2.10 ms          | 1.16 ms         | 3.1e-4 / 2.3e-4     |
| 3072 x 2560 x 4096 (A^T) | 1.33 ms     | 1.66 ms          | 0.72 ms         | 6.0e-4 / 2.2e-4     |
| 2048 x 6144 x 4096       | 2.00 ms     | 1.91 ms          | 1.16 ms         | 1.3e-3 / 1.8e-4     |

Accumulating the three dots straight into the running sum was 5% faster but drifted to ~1e-2
at K = 4096 (the tensor core's accumulation truncates), so each step's products are summed
apart. The pass costs ~12 bytes of traffic per operand element (read 4, write 8), so it pays only
when each element feeds many outputs. With N below `PREP_MIN` and M at or above it, only B (the
small operand) is prepared and the kernel splits each A tile in registers (wgmma takes A from
registers, so A needs no K-major copy). At 409600 x 48 x 1280, splitting A alone took 1.63 ms
against cuBLAS's 1.48 ms for the whole GEMM, while the B-only variant ran in 0.76 ms (H200,
`gemm_prepared_mode3.txt`; the product's kernel is not measured yet). With M below `PREP_MIN` and
N at or above it the launcher does the mirror image: wgmma reads its right operand from shared
memory, so the kernel computes C^T = B^T A^T (operands exchanged) with A prepared and B^T split in
registers. Below `PREP_MIN` on both sides it keeps the in-kernel tf32x3 kernel.

Limits: an infinite operand element makes its lo part NaN (inf - inf), so an output the reference
gives as +-inf comes out NaN; finite values above ~3.4e38 round their TF32 hi part up to inf, and
with fp16 parts a chunk whose largest magnitude is 2^111 (~2.6e33) or more overflows fp16 even
after scaling (the scale exponent is clamped to keep scales normal fp32 numbers). Triton's
in-kernel tf32x3 zeroes NaNs of the small products instead, at a cost per K step; neither case
occurs on finite inputs of ordinary range, which is all the suite and the evaluator feed.

Pasted into a solution with a GEMM (runtime.GEMM_PREP), after runtime/common.py, whose helpers it
calls; runtime/gemm.py's planner and launcher call its own. The generator reads the thresholds
below under their pasted names.
"""

import torch
import triton
import triton.language as tl

from .common import _cdiv

_GEMM_PREP_MIN = 256
"""min(M, N) from which the launcher prepares both operands (break-even measured near ~110), and
max(M, N) from which it prepares the small side's operand alone."""

_GEMM_PREP_ALIGN = 32
"""K is padded to a multiple of this (>= every BLOCK_K): aligned rows, no partial K step."""

_GEMM_SCALE_K = 64
"""fp16 parts: K-chunk of one power-of-two scale per row (= the prep tile's width and the BLOCK_K of
every fp16 configuration; K is padded to a multiple of it)."""


@triton.jit
def _gemm_round_tf32(x):
    # Round to the nearest TF32 value (10 mantissa bits) on the bit pattern; the low 13 bits are
    # then zero, so the tensor core's own truncation of its inputs changes nothing.
    b = x.to(tl.int32, bitcast=True)
    return ((b + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def _gemm_split_f16(x):
    # Error-compensated split of x (already scaled into fp16's range): x = hi + lo + O(2^-22 |x|).
    hi = x.to(tl.float16)
    lo = (x - hi.to(tl.float32)).to(tl.float16)
    return hi, lo


@triton.jit
def _gemm_exp2(n):
    # 2^n exactly, from the exponent bits (n in [-126, 127]).
    return ((n + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _gemm_pow2_exp(amax):
    # e with 2^e <= amax < 2^(e + 1), clamped to [-110, 110] so that 2^(14 - e) and 2^(e - 14) are
    # normal fp32 numbers; 14 (scale 1) where amax is 0, subnormal or not finite. A product of two
    # inverses is exact unless it leaves fp32's range, and then so do the products it scales.
    e = ((amax.to(tl.int32, bitcast=True) >> 23) & 255) - 127
    return tl.where((e > -127) & (e < 128), tl.minimum(tl.maximum(e, -110), 110), 14)


@triton.jit
def _gemm_prep_kernel(x_ptr, hi_ptr, lo_ptr, s_ptr, m_ptr, R, C, CP, B1, RT, s0, s1, sr, sc, msb, msr,
                      SPLIT: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    pid = tl.program_id(0)
    bid = pid // RT
    r = (pid % RT) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    src = x_ptr + (bid // B1).to(tl.int64) * s0 + (bid % B1).to(tl.int64) * s1
    x = tl.load(src + r[:, None].to(tl.int64) * sr + c[None, :].to(tl.int64) * sc,
                mask=(r[:, None] < R) & (c[None, :] < C), other=0.0)
    o = (bid.to(tl.int64) * R + r[:, None]) * CP + c[None, :]
    m = (r[:, None] < R) & (c[None, :] < CP)
    if SPLIT >= 2:
        # fp16 hi / lo of x scaled by 2^(14 - e): the scaled magnitudes stay below 2^15 (fp16
        # overflows at 65504). SPLIT 2: 2^e <= the max |x| of each row's BC-wide chunk, and the
        # inverse 2^(e - 14) goes to s_ptr ([.., R, CP / BC]) for the GEMM to undo it. SPLIT 3:
        # 2^e <= a given bound on the row's |x| (m_ptr at bid * msb + r * msr, computed by the
        # caller over more than one chunk): the consumer rebuilds the same inverse from it.
        if SPLIT == 2:
            e = _gemm_pow2_exp(tl.max(tl.abs(x), axis=1))
        else:
            e = _gemm_pow2_exp(tl.load(m_ptr + bid * msb + r * msr, mask=r < R, other=0.0))
        hi, lo = _gemm_split_f16(x * _gemm_exp2(14 - e)[:, None])
        tl.store(hi_ptr + o, hi, mask=m)
        tl.store(lo_ptr + o, lo, mask=m)
        if SPLIT == 2:
            so = (bid.to(tl.int64) * R + r) * (CP // BC) + tl.program_id(1)
            tl.store(s_ptr + so, _gemm_exp2(e - 14), mask=r < R)
    elif SPLIT == 1:
        hi = _gemm_round_tf32(x)
        tl.store(hi_ptr + o, hi, mask=m)
        tl.store(lo_ptr + o, _gemm_round_tf32(x - hi), mask=m)
    else:
        tl.store(hi_ptr + o, x, mask=m)


def _gemm_prep_plan(x, nb, b1, s0, s1, k_last, split, chunk=_GEMM_SCALE_K, msb=0, msr=0):
    """The part of _gemm_prep that depends on x's sizes and strides only, which a GEMM launch plan
    keeps: (KP, (shape of the parts, whether they are fp16, whether lo is a buffer of its own, shape
    of the scales or None, the kernel's grid, its size and stride arguments, its keywords))."""
    if k_last:
        R, K, sr, sc = x.shape[-2], x.shape[-1], x.stride(-2), x.stride(-1)
    else:
        R, K, sr, sc = x.shape[-1], x.shape[-2], x.stride(-1), x.stride(-2)
    f16 = split >= 2
    bc = chunk if f16 else _GEMM_SCALE_K
    align = chunk if f16 else _GEMM_PREP_ALIGN
    kp = _cdiv(K, align) * align
    rt = _cdiv(R, 64)
    return kp, ((nb, R, kp), f16, bool(split),
                (nb, R, kp // bc) if split == 2 else None, (nb * rt, _cdiv(kp, bc)),
                (R, K, kp, b1, rt, s0, s1, sr, sc, msb, msr), dict(SPLIT=split, BR=64, BC=bc, num_warps=4))


def _gemm_prep_run(x, plan, bound=None):
    """_gemm_prep on a kept plan (_gemm_prep_plan): the buffers and the kernel, per call -> (hi, lo,
    scales)."""
    shape, f16, own_lo, sshape, grid, args, kw = plan
    hi = torch.empty(shape, device=x.device, dtype=torch.float16 if f16 else torch.float32)
    lo = torch.empty_like(hi) if own_lo else hi
    scales = torch.empty(sshape, device=x.device) if sshape else None
    _gemm_prep_kernel[grid](x, hi, lo, hi if scales is None else scales, x if bound is None else bound, *args,
                            **kw)
    return hi, lo, scales


def _gemm_prep(x, nb, b1, s0, s1, k_last, split, chunk=_GEMM_SCALE_K, bound=None, msb=0, msr=0):
    """One GEMM operand ([.., R, K] if k_last else [.., K, R]; nb = batches, b1 = inner batch size,
    s0 / s1 = batch strides) -> (hi, lo, KP, scales): contiguous [nb, R, KP] with K last, zero-padded
    to KP. split 0: a plain copy in hi and lo = hi; 1: TF32 hi and lo parts; 2: fp16 hi and lo parts
    of x scaled per row and `chunk`-wide K chunk (a power of two, 16-64), with the inverse scales
    [nb, R, KP / chunk] (None for 0, 1 and 3); 3: fp16 parts scaled per row from `bound` (the bound
    on |x| of batch b, row r at bound[b * msb + r * msr]), KP a multiple of `chunk`."""
    kp, plan = _gemm_prep_plan(x, nb, b1, s0, s1, k_last, split, chunk, msb, msr)
    hi, lo, scales = _gemm_prep_run(x, plan, bound)
    return hi, lo, kp, scales
