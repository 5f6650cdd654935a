"""Attention on fp16 parts (skills/flash-attention-tiling's `f16_parts` variant): the launcher's
runtime call `_attn_parts_run`.

The default kernel's `tf32x3` dots re-split K and V tiles into TF32 parts in registers for every
query tile that reads them. Here K and V are split once per forward into scaled fp16 hi / lo
parts (runtime/gemm_prep.py's preparation: x s = hi + lo + O(2^-22 |x s|), s a power of two), and
the kernel splits only what it computes (the query tile once, each probability tile once) and
runs three fp16 tensor-core products per dot (hi*lo + lo*hi + hi*hi): fp32-class accuracy
(EVALUATION.md's error-compensated rule) at fp16's rate, twice TF32's.

Scales: K's rows (one key's head dim) each get one power of two, so a score is the fp16 dot
times the query row's and the key's inverse scales. V is prepared transposed, (dv, keys), with
one scale per head-dim column over every key (from its largest magnitude, one reduction over V):
the kernel sums p v in those units and undoes the column scales once, after its key loop, so its
key tiles may take any width. Values more than ~2^24 below their column's largest lose bits in
fp16's subnormals, an absolute error of at most ~2^-38 of that largest (runtime/gemm_prep.py's
bound). Padding: head dims to a power of two (the dot's width, zeros), keys to a multiple of 64.

Pasted after runtime/attention.py and runtime/gemm_prep.py, whose helpers it calls.
"""

import torch
import triton
import triton.language as tl

from .attention import _attn_flags, _attn_views
from .common import _cdiv, _i64, _npow2
from .gemm_prep import _gemm_exp2, _gemm_pow2_exp, _gemm_prep

_ATTN_PARTS_N = 64
"""V's keys are padded to a multiple of this (the preparation's tile width): >= the parts
kernel's widest key tile (families/attention/kernel_parts.py)."""


@triton.jit
def _attn_dot3(ah, al, bh, bl):
    """a b on fp16 parts: the small products first, the large one last, into a fresh fp32
    accumulator (the caller adds it to any running sum in fp32: runtime/gemm_prep.py says why)."""
    t = tl.dot(ah, bl)
    t = tl.dot(al, bh, acc=t)
    t = tl.dot(ah, bh, acc=t)
    return t


@triton.jit
def _attn_qk(qh, ql, kh, kl, ko, cols):
    """Scores of a query tile's parts against the key tile at offsets `ko` ([d, keys]) of K's
    parts, still in scaled units."""
    kht = tl.load(kh + ko, mask=cols[None, :], other=0.0)
    klt = tl.load(kl + ko, mask=cols[None, :], other=0.0)
    return _attn_dot3(qh, ql, kht, klt)


@triton.jit
def _attn_pv(ph, pl, vh, vl, vb, offs_n, offs_dv, DV, TKP):
    """p v on parts for head-dim columns `offs_dv` of the key tile `offs_n`, from V's (dv, keys)
    parts (keys padded to TKP, so every key of a tile is addressable), in scaled units: p's row
    scales and V's column scales are the caller's to undo."""
    vo = vb + offs_dv[None, :] * TKP + offs_n[:, None]
    vht = tl.load(vh + vo, mask=offs_dv[None, :] < DV, other=0.0)
    vlt = tl.load(vl + vo, mask=offs_dv[None, :] < DV, other=0.0)
    return _attn_dot3(ph, pl, vht, vlt)


@triton.jit
def _attn_v_scales(vs, bid, offs_dv, DV):
    """The inverse of V's scale for each head-dim column: 2^(e - 14), 2^e <= the column's largest
    magnitude over every key (`vs` holds those bounds, (Z * H, dv)), as the preparation scaled it."""
    bound = tl.load(vs + bid * DV + offs_dv, mask=offs_dv < DV, other=0.0)
    return _gemm_exp2(_gemm_pow2_exp(bound) - 14)


def _attn_parts(k4, v4):
    """K's (Z * H, keys, KP) fp16 parts with each key's inverse scale, KP = the head dim padded to
    a power of two >= 16, and V's transposed (Z * H, dv, keys padded) parts with the bounds its
    column scales come from (`_attn_v_scales`)."""
    nb, h, dv = k4.shape[0] * k4.shape[1], k4.shape[1], v4.shape[-1]
    kp = max(16, _npow2(k4.shape[-1]))
    kh, kl, _, ks = _gemm_prep(k4, nb, h, k4.stride(0), k4.stride(1), True, 2, chunk=kp)
    vs = torch.linalg.vector_norm(v4, float("inf"), dim=-2).reshape(nb, dv)
    vh, vl, tkp, _ = _gemm_prep(v4, nb, h, v4.stride(0), v4.stride(1), False, 3, chunk=_ATTN_PARTS_N,
                                bound=vs, msb=dv, msr=1)
    return (kh, kl, ks, vh, vl, vs), kp, tkp


def _attn_parts_run(kern, q, k, v, m, scale, p):
    """`_attn_run` on fp16 parts: the same views and output, K and V prepared first, the parts
    kernel (`kern`) launched with one program per (query tile, batch x head); split_d splits the
    head dims into two power-of-two chunks where that pads less (`_attn_split`)."""
    flat, views = _attn_views(q, k, v, m, scale, p)
    if views is None:
        return flat
    (q4, k4, v4, m4, o), scale, mode, (z, h, tq, tk, d, dv) = views
    if tk == 0:  # no keys: what the default kernel's empty key loop leaves (softmax's 0 / 0)
        o.fill_(float("nan") if p.get("weights", "softmax") == "softmax" else 0.0)
        return flat
    parts, kp, tkp = _attn_parts(k4, v4)
    args = [q4, *parts, m4, o, scale, float(p["fill"]), z, h, tq, tk, d, dv, kp, tkp,
            *q4.stride(), *m4.stride(), *o.stride()]
    kern[lambda meta: (_cdiv(tq, meta["BLOCK_M"]), z * h)](
        *args, **_attn_flags(p, mode, d, dv), I64=_i64(q4, m4, o, parts[0], parts[3]))
    return flat

