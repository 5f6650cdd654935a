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
one scale per head-dim column and 64-key chunk (`_ATTN_PARTS_N`, the kernel's BLOCK_N): a
chunk's scales multiply the columns of that key tile's product. Padding: head dims to a power of
two (the dot's width, zeros), keys to a multiple of the chunk.

Pasted after runtime/attention.py and runtime/gemm_prep.py, whose helpers it calls.
"""

from .attention import _attn_flags, _attn_views
from .common import _cdiv, _i64, _npow2
from .gemm_prep import _gemm_prep

_ATTN_PARTS_N = 64
"""Keys per V scale chunk: the parts kernel's BLOCK_N (families/attention/kernel_parts.py)."""


def _attn_parts(k4, v4):
    """K's (Z * H, keys, KP) and V's transposed (Z * H, dv, keys padded) fp16 parts with their
    inverse scales, KP = the head dim padded to a power of two >= 16."""
    nb, h = k4.shape[0] * k4.shape[1], k4.shape[1]
    kp = max(16, _npow2(k4.shape[-1]))
    kh, kl, _, ks = _gemm_prep(k4, nb, h, k4.stride(0), k4.stride(1), True, 2, chunk=kp)
    vh, vl, tkp, vs = _gemm_prep(v4, nb, h, v4.stride(0), v4.stride(1), False, 2, chunk=_ATTN_PARTS_N)
    return (kh, kl, ks, vh, vl, vs), kp, tkp


def _attn_parts_run(kern, q, k, v, m, scale, p):
    """`_attn_run` on fp16 parts: the same views and output, K and V prepared first, the parts
    kernel (`kern`) launched with one program per (query tile, batch x head)."""
    flat, views = _attn_views(q, k, v, m, scale, p)
    if views is None:
        return flat
    (q4, k4, v4, m4, o), scale, mode, (z, h, tq, tk, d, dv) = views
    parts, kp, tkp = _attn_parts(k4, v4)
    args = [q4, *parts, m4, o, scale, float(p["fill"]), z, h, tq, tk, d, dv, kp, tkp,
            *q4.stride(), *m4.stride(), *o.stride()]
    kern[lambda meta: (_cdiv(tq, meta["BLOCK_M"]), z * h)](
        *args, **_attn_flags(p, mode), I64=_i64(q4, m4, o, parts[0], parts[3]), BLOCK_D=kp,
        BLOCK_DV=max(16, _npow2(dv)))
    return flat

