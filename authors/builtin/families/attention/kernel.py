"""The fused attention kernel (flash-attention style) and its renderer.

One program owns a tile of BLOCK_M queries of one (batch, head) and walks the keys in BLOCK_N
tiles: scores = q k^T (scaled and masked as the reference does, runtime `_attn_scores`), a
running row max and sum of exponentials (online softmax), and the accumulator of p v rescaled
whenever the max grows; ReLU or sigmoid weights (WEIGHTS 1, 2) need neither: p v is summed as
is. The S x S score matrix never reaches memory. Under a causal mask a query tile stops at its
last key (tiles above the diagonal are skipped, not masked).

Two constexpr variants (skills/flash-attention-tiling `variants`, neither measured yet; off, the
kernel compiles as without them): HEAD_MAJOR orders program id 1 by (head, batch), so a per-head
mask read by every batch is served from L2; BLOCK_D1 / BLOCK_DV1 > 0 split a head dim that is no
power of two into two power-of-two chunks (80 -> 64 + 16) rather than padding it (to 128).

The kernel below is real Triton and, verbatim, what a region launches under the `default` and
`strict` policies (fp32-accurate tf32x3 dots); `render` only renames it, sets the dots' precision
and puts the autotuning decorator on top.
"""

from __future__ import annotations

import inspect

import triton
import triton.language as tl

from ...runtime.attention import _attn_key_end, _attn_program, _attn_weights
from ...templates.base import EmitContext
from ...templates.launch import autotune
from ..gemm.match import precision

# Rationale: no GPU measurement yet. Tiles follow the flash-attention forward's usual shapes for
# head dims 32-128 (BLOCK_M 64-128 queries x BLOCK_N 32-64 keys); tf32x3 runs three tensor-core
# products per dot, so the register-heavy 128 x 64 tile gets 8 warps. 32 x 32 keeps head dims up
# to 256 within registers. The first entry is the only one under the CPU interpreter: wide tiles
# there mean fewer interpreted loop steps.
CONFIGS = [
    ({"BLOCK_M": 64, "BLOCK_N": 64}, 4, 2),
    ({"BLOCK_M": 128, "BLOCK_N": 64}, 8, 2),
    ({"BLOCK_M": 128, "BLOCK_N": 32}, 4, 3),
    ({"BLOCK_M": 64, "BLOCK_N": 32}, 4, 3),
    ({"BLOCK_M": 128, "BLOCK_N": 64}, 8, 3),
    ({"BLOCK_M": 32, "BLOCK_N": 32}, 4, 2),
]
TUNE_KEY = ["TQ", "TK", "D", "DV"]
MAX_HEAD_DIM = 256
"""Head dims above this do not fit a query tile in registers: such attention stays in PyTorch."""


@triton.jit
def _attn_fwd_kernel(q, k, v, m, o, scale, fill, Z, H, TQ, TK, D, DV,
                     sqz, sqh, sqm, sqd, skz, skh, skn, skd, svz, svh, svn, svd,
                     smz, smh, smm, smn, soz, soh, som, sod,
                     MASK: tl.constexpr, MASK_FIRST: tl.constexpr, CAUSAL: tl.constexpr,
                     WEIGHTS: tl.constexpr, I64: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                     HEAD_MAJOR: tl.constexpr, BLOCK_D1: tl.constexpr, BLOCK_DV1: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    z, h, offs_m = _attn_program(Z, H, HEAD_MAJOR, I64, BLOCK_M)
    # BLOCK_D1 / BLOCK_DV1 > 0 split the head dims into two power-of-two chunks [0, BLOCK_D) and
    # [BLOCK_D, BLOCK_D + BLOCK_D1) instead of padding them (80 -> 64 + 16, not 128).
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    rows = offs_m < TQ
    qb = q + z * sqz + h * sqh + offs_m[:, None] * sqm
    qt = tl.load(qb + offs_d[None, :] * sqd, mask=rows[:, None] & (offs_d[None, :] < D), other=0.0)
    if BLOCK_D1 > 0:
        offs_d1 = BLOCK_D + tl.arange(0, BLOCK_D1)
        qt1 = tl.load(qb + offs_d1[None, :] * sqd, mask=rows[:, None] & (offs_d1[None, :] < D), other=0.0)
    kb = k + z * skz + h * skh
    vb = v + z * svz + h * svh
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
        kt = tl.load(kb + offs_d[:, None] * skd + offs_n[None, :] * skn,
                     mask=(offs_d[:, None] < D) & cols[None, :], other=0.0)
        s = tl.dot(qt, kt, input_precision="tf32x3")
        if BLOCK_D1 > 0:
            kt1 = tl.load(kb + offs_d1[:, None] * skd + offs_n[None, :] * skn,
                          mask=(offs_d1[:, None] < D) & cols[None, :], other=0.0)
            s += tl.dot(qt1, kt1, input_precision="tf32x3")
        p, alpha, m_i, l_i = _attn_weights(s, mb, offs_m, offs_n, rows, cols, smm, smn, scale, fill, m_i,
                                           l_i, MASK, MASK_FIRST, CAUSAL, WEIGHTS)
        vt = tl.load(vb + offs_n[:, None] * svn + offs_dv[None, :] * svd,
                     mask=cols[:, None] & (offs_dv[None, :] < DV), other=0.0)
        if BLOCK_DV1 > 0:
            vt1 = tl.load(vb + offs_n[:, None] * svn + offs_dv1[None, :] * svd,
                          mask=cols[:, None] & (offs_dv1[None, :] < DV), other=0.0)
        if WEIGHTS == 0:
            acc = acc * alpha[:, None] + tl.dot(p, vt, input_precision="tf32x3")
            if BLOCK_DV1 > 0:
                acc1 = acc1 * alpha[:, None] + tl.dot(p, vt1, input_precision="tf32x3")
        else:  # elementwise weights: nothing to rescale
            acc += tl.dot(p, vt, input_precision="tf32x3")
            if BLOCK_DV1 > 0:
                acc1 += tl.dot(p, vt1, input_precision="tf32x3")
    out = acc
    if WEIGHTS == 0:
        # A fully masked row divides 0 by 0: NaN, as the reference's softmax gives.
        out = acc / l_i[:, None]
    ob = o + z * soz + h * soh + offs_m[:, None] * som
    tl.store(ob + offs_dv[None, :] * sod, out, mask=rows[:, None] & (offs_dv[None, :] < DV))
    if BLOCK_DV1 > 0:
        out1 = acc1
        if WEIGHTS == 0:
            out1 = acc1 / l_i[:, None]
        tl.store(ob + offs_dv1[None, :] * sod, out1, mask=rows[:, None] & (offs_dv1[None, :] < DV))


def render(name: str, ctx: EmitContext) -> str:
    """The kernel as generated source named `name`, its dots at the policy's precision, under
    its autotuning decorator."""
    text = inspect.getsource(_attn_fwd_kernel.fn)
    text = text[text.index("def "):].replace("def _attn_fwd_kernel(", f"def {name}(", 1)
    prec = precision(ctx)
    if prec != "tf32x3":
        text = text.replace('input_precision="tf32x3"', f'input_precision="{prec}"')
    return autotune(CONFIGS, TUNE_KEY) + text.rstrip("\n")


__all__ = ["CONFIGS", "MAX_HEAD_DIM", "TUNE_KEY", "_attn_key_end", "_attn_program", "_attn_weights", "render"]
