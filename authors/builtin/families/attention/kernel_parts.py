"""The fused attention kernel on fp16 parts (skills/flash-attention-tiling's `f16_parts` variant)
and its renderer.

The same walk as kernel.py's (a query tile per program, key tiles with a running max and sum,
causal tiles skipped), with every product error-compensated on fp16 tensor cores instead of
Triton's in-register `tf32x3`: K and V arrive split and scaled (runtime/attention_parts.py); the
query tile is split once, before the key loop, with one power-of-two scale per row; each tile of
weights is split once, also per row. Per dot, the small products go first into a fresh
accumulator and the large one last; the tile's result is unscaled (exact powers of two) and only
then added to the running sum in fp32, as the GEMM family does (runtime/gemm_prep.py says why:
the tensor core's own accumulation truncates).

Not measured on a GPU yet: the variant is a move the rounds judge against the default.
"""

from __future__ import annotations

import inspect

import triton
import triton.language as tl

from ...runtime.attention import _attn_online, _attn_scores, _attn_zh
from ...runtime.attention_parts import _ATTN_PARTS_N
from ...runtime.gemm_prep import _gemm_exp2, _gemm_pow2_exp, _gemm_split_f16
from ...templates.launch import autotune
from .kernel import TUNE_KEY

# Rationale: no GPU measurement yet. BLOCK_N is V's scale chunk (fixed); fp16 parts take half
# the registers of fp32 tiles, so 128 queries fit 4 warps. The first entry is the only one under
# the CPU interpreter.
PARTS_CONFIGS = [
    ({"BLOCK_M": 64, "BLOCK_N": _ATTN_PARTS_N}, 4, 2),
    ({"BLOCK_M": 128, "BLOCK_N": _ATTN_PARTS_N}, 8, 2),
    ({"BLOCK_M": 128, "BLOCK_N": _ATTN_PARTS_N}, 4, 2),
    ({"BLOCK_M": 128, "BLOCK_N": _ATTN_PARTS_N}, 8, 3),
    ({"BLOCK_M": 64, "BLOCK_N": _ATTN_PARTS_N}, 4, 3),
]


@triton.jit
def _attn_parts_kernel(q, kh, kl, ks, vh, vl, vs, m, o, scale, fill, Z, H, TQ, TK, D, DV, KP, TKP,
                       sqz, sqh, sqm, sqd, smz, smh, smm, smn, soz, soh, som, sod,
                       MASK: tl.constexpr, MASK_FIRST: tl.constexpr, CAUSAL: tl.constexpr,
                       WEIGHTS: tl.constexpr, HEAD_MAJOR: tl.constexpr, I64: tl.constexpr,
                       BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    z, h = _attn_zh(Z, H, HEAD_MAJOR)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if I64:
        z = z.to(tl.int64)
        h = h.to(tl.int64)
        offs_m = offs_m.to(tl.int64)
    bid = z * H + h  # the parts' batch (Z * H of them, head fastest)
    offs_d = tl.arange(0, BLOCK_D)  # BLOCK_D == KP, K's padded row
    offs_dv = tl.arange(0, BLOCK_DV)
    rows = offs_m < TQ
    dvs = offs_dv < DV
    qt = tl.load(q + z * sqz + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
                 mask=rows[:, None] & (offs_d[None, :] < D), other=0.0)
    eq = _gemm_pow2_exp(tl.max(tl.abs(qt), axis=1))
    qh, ql = _gemm_split_f16(qt * _gemm_exp2(14 - eq)[:, None])
    fq = _gemm_exp2(eq - 14)
    kb = bid * TK * KP
    vb = bid * DV * TKP
    vsb = bid * DV * (TKP // BLOCK_N)
    mb = m + z * smz + h * smh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    hi = TK
    if CAUSAL:  # keys after the tile's last query are masked for every row: skip them
        hi = tl.minimum(TK, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, hi, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        cols = offs_n < TK
        ko = kb + offs_n[None, :] * KP + offs_d[:, None]
        kht = tl.load(kh + ko, mask=cols[None, :], other=0.0)
        klt = tl.load(kl + ko, mask=cols[None, :], other=0.0)
        fk = tl.load(ks + bid * TK + offs_n, mask=cols, other=1.0)
        s = tl.dot(qh, klt)
        s = tl.dot(ql, kht, acc=s)
        s = tl.dot(qh, kht, acc=s)
        s = (s * fq[:, None]) * fk[None, :]
        s = _attn_scores(s, mb, offs_m, offs_n, rows[:, None] & cols[None, :], smm, smn, scale, fill,
                         MASK, MASK_FIRST)
        keep = cols[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))
        # V's parts are (dv, keys) with keys padded to TKP: every key of the tile is addressable.
        vo = vb + offs_dv[None, :] * TKP + offs_n[:, None]
        vht = tl.load(vh + vo, mask=dvs[None, :], other=0.0)
        vlt = tl.load(vl + vo, mask=dvs[None, :], other=0.0)
        fv = tl.load(vs + vsb + offs_dv * (TKP // BLOCK_N) + n0 // BLOCK_N, mask=dvs, other=1.0)
        if WEIGHTS == 0:
            p, alpha, m_i, l_i = _attn_online(s, m_i, l_i)
        elif WEIGHTS == 1:  # elementwise weights, 0 at -inf (masked keys, columns past the end)
            p = tl.where(s > 0.0, s, 0.0)
        else:
            p = 1.0 / (1.0 + tl.exp(-s))
        ep = _gemm_pow2_exp(tl.max(p, axis=1))  # weights are >= 0
        ph, pl = _gemm_split_f16(p * _gemm_exp2(14 - ep)[:, None])
        part = tl.dot(ph, vlt)
        part = tl.dot(pl, vht, acc=part)
        part = tl.dot(ph, vht, acc=part)
        part = (part * _gemm_exp2(ep - 14)[:, None]) * fv[None, :]
        if WEIGHTS == 0:
            acc = acc * alpha[:, None] + part
        else:
            acc += part
    out = acc
    if WEIGHTS == 0:
        # A fully masked row divides 0 by 0: NaN, as the reference's softmax gives.
        out = acc / l_i[:, None]
    ob = o + z * soz + h * soh + offs_m[:, None] * som
    tl.store(ob + offs_dv[None, :] * sod, out, mask=rows[:, None] & dvs[None, :])


def render_parts(name: str) -> str:
    """The parts kernel as generated source named `name`, under its autotuning decorator."""
    text = inspect.getsource(_attn_parts_kernel.fn)
    text = text[text.index("def "):].replace("def _attn_parts_kernel(", f"def {name}(", 1)
    return autotune(PARTS_CONFIGS, TUNE_KEY) + text.rstrip("\n")


__all__ = ["PARTS_CONFIGS", "_attn_online", "_attn_scores", "_attn_zh", "_gemm_exp2", "_gemm_pow2_exp",
           "_gemm_split_f16", "render_parts"]
