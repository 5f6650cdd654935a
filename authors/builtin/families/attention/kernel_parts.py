"""The fused attention kernel on fp16 parts (skills/flash-attention-tiling's `f16_parts` variant)
and its renderer.

The same walk as kernel.py's (a query tile per program, key tiles with a running max and sum,
causal tiles skipped), with every product error-compensated on fp16 tensor cores instead of
Triton's in-register `tf32x3`: K and V arrive split and scaled (runtime/attention_parts.py); the
query tile is split once, before the key loop, with one power-of-two scale per row; each tile of
weights is split once, also per row. Per dot, the small products go first into a fresh
accumulator and the large one last (runtime/attention_parts.py's `_attn_dot3`); a tile's scores
are unscaled at once, its p v by the weights' row scales (exact powers of two) and only then added
to the running sum in fp32, as the GEMM family does (runtime/gemm_prep.py says why: the tensor
core's own accumulation truncates); V's column scales are undone once, after the key loop. With
BLOCK_D1 / BLOCK_DV1 > 0 (the `split_d` variant) head dims run as two power-of-two chunks.

Not measured on a GPU yet: the variant is a move the rounds judge against the default.
"""

from __future__ import annotations

import inspect

import triton
import triton.language as tl

from ...runtime.attention import _attn_key_end, _attn_program, _attn_weights
from ...runtime.attention_parts import _attn_dot3, _attn_pv, _attn_qk, _attn_v_scales
from ...runtime.gemm_prep import _gemm_exp2, _gemm_pow2_exp, _gemm_split_f16
from ...templates.launch import autotune
from .kernel import TUNE_KEY

# Rationale: no GPU measurement yet; registers and spills compiled offline for sm_90a
# (tests/authors/attention_compile.py). A query tile's parts take as many registers as its fp32
# tile, and the accumulator of each key tile's p v as many as the running one: 128 queries need 8
# warps, and 32-key tiles halve the score, weight and mask tiles. Keys are padded to a multiple of
# _ATTN_PARTS_N, so every tile below is addressable. The first entry is the only one under the CPU
# interpreter.
PARTS_CONFIGS = [
    ({"BLOCK_M": 64, "BLOCK_N": 64}, 4, 2),
    ({"BLOCK_M": 64, "BLOCK_N": 32}, 4, 3),
    ({"BLOCK_M": 128, "BLOCK_N": 64}, 8, 2),
    ({"BLOCK_M": 128, "BLOCK_N": 32}, 8, 3),
    ({"BLOCK_M": 64, "BLOCK_N": 64}, 4, 3),
]


@triton.jit
def _attn_parts_kernel(q, kh, kl, ks, vh, vl, vs, m, o, scale, fill, Z, H, TQ, TK, D, DV, KP, TKP,
                       sqz, sqh, sqm, sqd, smz, smh, smm, smn, soz, soh, som, sod,
                       MASK: tl.constexpr, MASK_FIRST: tl.constexpr, CAUSAL: tl.constexpr,
                       WEIGHTS: tl.constexpr, HEAD_MAJOR: tl.constexpr, I64: tl.constexpr,
                       BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_D1: tl.constexpr,
                       BLOCK_DV1: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    z, h, offs_m = _attn_program(Z, H, HEAD_MAJOR, I64, BLOCK_M)
    bid = z * H + h  # the parts' batch (Z * H of them, head fastest)
    # Head dims as one padded block (BLOCK_D = KP, K's padded row) or, with BLOCK_D1 / BLOCK_DV1
    # > 0, two power-of-two chunks [0, BLOCK_D) and [BLOCK_D, BLOCK_D + BLOCK_D1) (80 -> 64 + 16).
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    rows = offs_m < TQ
    qb = q + z * sqz + h * sqh + offs_m[:, None] * sqm
    qt = tl.load(qb + offs_d[None, :] * sqd, mask=rows[:, None] & (offs_d[None, :] < D), other=0.0)
    amax = tl.max(tl.abs(qt), axis=1)
    if BLOCK_D1 > 0:
        offs_d1 = BLOCK_D + tl.arange(0, BLOCK_D1)
        qt1 = tl.load(qb + offs_d1[None, :] * sqd, mask=rows[:, None] & (offs_d1[None, :] < D), other=0.0)
        amax = tl.maximum(amax, tl.max(tl.abs(qt1), axis=1))
    eq = _gemm_pow2_exp(amax)  # one scale per query row, over both chunks
    sq = _gemm_exp2(14 - eq)[:, None]
    qh, ql = _gemm_split_f16(qt * sq)
    if BLOCK_D1 > 0:
        qh1, ql1 = _gemm_split_f16(qt1 * sq)
    fq = _gemm_exp2(eq - 14)
    kb = bid * TK * KP
    vb = bid * DV * TKP
    mb = m + z * smz + h * smh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    if BLOCK_DV1 > 0:
        offs_dv1 = BLOCK_DV + tl.arange(0, BLOCK_DV1)
        acc1 = tl.zeros([BLOCK_M, BLOCK_DV1], tl.float32)
    for n0 in range(0, _attn_key_end(TK, BLOCK_M, CAUSAL), BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        cols = offs_n < TK
        s = _attn_qk(qh, ql, kh, kl, kb + offs_n[None, :] * KP + offs_d[:, None], cols)
        if BLOCK_D1 > 0:  # its own fresh accumulator, added in fp32
            s += _attn_qk(qh1, ql1, kh, kl, kb + offs_n[None, :] * KP + offs_d1[:, None], cols)
        s = (s * fq[:, None]) * tl.load(ks + bid * TK + offs_n, mask=cols, other=1.0)[None, :]
        p, alpha, m_i, l_i = _attn_weights(s, mb, offs_m, offs_n, rows, cols, smm, smn, scale, fill, m_i,
                                           l_i, MASK, MASK_FIRST, CAUSAL, WEIGHTS)
        ep = _gemm_pow2_exp(tl.max(p, axis=1))  # weights are >= 0
        ph, pl = _gemm_split_f16(p * _gemm_exp2(14 - ep)[:, None])
        fp = _gemm_exp2(ep - 14)[:, None]
        part = _attn_pv(ph, pl, vh, vl, vb, offs_n, offs_dv, DV, TKP) * fp
        if BLOCK_DV1 > 0:
            part1 = _attn_pv(ph, pl, vh, vl, vb, offs_n, offs_dv1, DV, TKP) * fp
        if WEIGHTS == 0:
            acc = acc * alpha[:, None] + part
            if BLOCK_DV1 > 0:
                acc1 = acc1 * alpha[:, None] + part1
        else:
            acc += part
            if BLOCK_DV1 > 0:
                acc1 += part1
    ob = o + z * soz + h * soh + offs_m[:, None] * som
    # V's column scales undone once; a fully masked row divides 0 by 0 under softmax: NaN, as the
    # reference's gives.
    out = acc * _attn_v_scales(vs, bid, offs_dv, DV)[None, :]
    if WEIGHTS == 0:
        out = out / l_i[:, None]
    tl.store(ob + offs_dv[None, :] * sod, out, mask=rows[:, None] & (offs_dv[None, :] < DV))
    if BLOCK_DV1 > 0:
        out1 = acc1 * _attn_v_scales(vs, bid, offs_dv1, DV)[None, :]
        if WEIGHTS == 0:
            out1 = out1 / l_i[:, None]
        tl.store(ob + offs_dv1[None, :] * sod, out1, mask=rows[:, None] & (offs_dv1[None, :] < DV))


def render_parts(name: str) -> str:
    """The parts kernel as generated source named `name`, under its autotuning decorator."""
    text = inspect.getsource(_attn_parts_kernel.fn)
    text = text[text.index("def "):].replace("def _attn_parts_kernel(", f"def {name}(", 1)
    return autotune(PARTS_CONFIGS, TUNE_KEY) + text.rstrip("\n")


__all__ = ["PARTS_CONFIGS", "_attn_dot3", "_attn_key_end", "_attn_program", "_attn_pv", "_attn_qk",
           "_attn_v_scales", "_attn_weights", "_gemm_exp2", "_gemm_pow2_exp", "_gemm_split_f16",
           "render_parts"]
