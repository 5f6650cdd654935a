"""Operand preparation for tensor-core GEMMs (generated code, shared by every GEMM region).

Before a large GEMM the launcher copies each operand once with K contiguous and zero-padded to a
multiple of 32, and under strict fp32 splits it into TF32 `hi` and `lo` parts on the way
(x = hi + lo + O(2^-22 |x|), both exactly representable in TF32). The GEMM kernel then runs
three plain TF32 tensor-core dots per K step, hi*lo + lo*hi + hi*hi, into a fresh accumulator
added to the fp32 running sum: fp32-class accuracy (EVALUATION.md's error-compensated rule).

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
gives as +-inf comes out NaN; finite values above ~3.4e38 round their hi part up to inf. Triton's
in-kernel tf32x3 zeroes NaNs of the small products instead, at a cost per K step; neither case
occurs on finite inputs of ordinary range, which is all the suite and the evaluator feed.
"""

from __future__ import annotations

PREP_MIN = 256
"""min(M, N) from which the launcher prepares both operands (break-even measured near ~110), and
max(M, N) from which it prepares the small side's operand alone."""

PREP_ALIGN = 32
"""K is padded to a multiple of this (>= every BLOCK_K): aligned rows, no partial K step."""

GEMM_PREP = f'''
_GEMM_PREP_MIN = {PREP_MIN}


@triton.jit
def _gemm_round_tf32(x):
    # Round to the nearest TF32 value (10 mantissa bits) on the bit pattern; the low 13 bits are
    # then zero, so the tensor core's own truncation of its inputs changes nothing.
    b = x.to(tl.int32, bitcast=True)
    return ((b + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def _gemm_prep_kernel(x_ptr, hi_ptr, lo_ptr, R, C, CP, B1, RT, s0, s1, sr, sc, SPLIT: tl.constexpr,
                      BR: tl.constexpr, BC: tl.constexpr):
    pid = tl.program_id(0)
    bid = pid // RT
    r = (pid % RT) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    src = x_ptr + (bid // B1).to(tl.int64) * s0 + (bid % B1).to(tl.int64) * s1
    x = tl.load(src + r[:, None].to(tl.int64) * sr + c[None, :].to(tl.int64) * sc,
                mask=(r[:, None] < R) & (c[None, :] < C), other=0.0)
    o = (bid.to(tl.int64) * R + r[:, None]) * CP + c[None, :]
    m = (r[:, None] < R) & (c[None, :] < CP)
    if SPLIT:
        hi = _gemm_round_tf32(x)
        tl.store(hi_ptr + o, hi, mask=m)
        tl.store(lo_ptr + o, _gemm_round_tf32(x - hi), mask=m)
    else:
        tl.store(hi_ptr + o, x, mask=m)


def _gemm_prep(x, nb, b1, s0, s1, k_last, split):
    """One GEMM operand ([.., R, K] if k_last else [.., K, R]; nb = batches, b1 = inner batch size,
    s0 / s1 = batch strides) -> (hi, lo, KP): contiguous [nb, R, KP] with K last, zero-padded to
    KP; split: TF32 hi and lo parts, else a plain copy in hi and lo = hi."""
    if k_last:
        R, K, sr, sc = x.shape[-2], x.shape[-1], x.stride(-2), x.stride(-1)
    else:
        R, K, sr, sc = x.shape[-1], x.shape[-2], x.stride(-1), x.stride(-2)
    kp = triton.cdiv(K, {PREP_ALIGN}) * {PREP_ALIGN}
    hi = torch.empty((nb, R, kp), device=x.device, dtype=torch.float32)
    lo = torch.empty_like(hi) if split else hi
    rt = triton.cdiv(R, 64)
    _gemm_prep_kernel[(nb * rt, triton.cdiv(kp, 64))](x, hi, lo, R, K, kp, b1, rt, s0, s1, sr, sc,
                                                      SPLIT=split, BR=64, BC=64, num_warps=4)
    return hi, lo, kp
'''
