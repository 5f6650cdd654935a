"""The attention launchers' one runtime call `_attn_run` (skills/flash-attention-tiling) and the
kernel's score helper `_attn_scores`.

A launcher hands q, k (or k^T as the reference's matmul read it), v, an optional mask and its
scale; `_attn_run` views each as (Z, H, rows, cols) by strides (batch dims broadcast with stride
0, no copies for up to two batch dims), allocates the output and launches one program per
(query tile, batch x head). A packed input (nn.MultiheadAttention's in-projection output,
(..., 3 * E)) is split into heads by views only, and the output is written in the module's
(..., E) layout, so the out-projection reads it without a transpose copy.
"""

import math

import torch
import triton
import triton.language as tl

from .common import _cdiv, _i64, _npow2

# Mask modes (the kernel's MASK): none, additive, filled where true, filled where false (SDPA's
# boolean masks name the positions that take part).
_ATTN_NONE, _ATTN_ADD, _ATTN_FILL, _ATTN_KEEP = 0, 1, 2, 3
# The kernel's WEIGHTS: online softmax, or elementwise ReLU / sigmoid weights.
_ATTN_WEIGHTS = {"softmax": 0, "relu": 1, "sigmoid": 2}


@triton.jit
def _attn_scores(s, mp, offs_m, offs_n, valid, smm, smn, scale, fill, MASK: tl.constexpr,
                 MASK_FIRST: tl.constexpr):
    """Scores of one tile, scaled and masked in the reference's order (a mask applied before the
    scale is scaled with the scores; one applied after is not)."""
    if not MASK_FIRST:
        s = s * scale
    if MASK != 0:
        mv = tl.load(mp + offs_m[:, None] * smm + offs_n[None, :] * smn, mask=valid, other=0)
        if MASK == 1:
            s = s + mv
        elif MASK == 2:
            s = tl.where(mv != 0, fill, s)
        else:
            s = tl.where(mv != 0, s, fill)
    if MASK_FIRST:
        s = s * scale
    return s


@triton.jit
def _attn_program(Z, H, HEAD_MAJOR: tl.constexpr, I64: tl.constexpr, BLOCK_M: tl.constexpr):
    """This program's batch, head and query rows. Program id 1 walks batch-major, or head-major,
    where one head's batches run back to back and a per-head mask is re-read from L2; with I64 the
    three index in int64."""
    zh = tl.program_id(1)
    if HEAD_MAJOR:
        h = zh // Z
        z = zh % Z
    else:
        z = zh // H
        h = zh % H
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    if I64:
        z = z.to(tl.int64)
        h = h.to(tl.int64)
        offs_m = offs_m.to(tl.int64)
    return z, h, offs_m


@triton.jit
def _attn_key_end(TK, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """Where this program's walk over the keys ends: every key, or under CAUSAL the query tile's
    last one (keys after it are masked for every row of the tile: skipped, not masked)."""
    hi = TK
    if CAUSAL:
        hi = tl.minimum(TK, (tl.program_id(0) + 1) * BLOCK_M)
    return hi


@triton.jit
def _attn_online(s, m_i, l_i):
    """One key tile of online softmax: the tile's weights, the factor that rescales what was
    summed so far, and the new running max and sum. A row with every score so far masked keeps
    m = -inf; shifting by 0 instead keeps its exponentials 0 (not NaN), so a later key counts."""
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp(m_i - m_safe)
    p = tl.exp(s - m_safe[:, None])
    return p, alpha, m_new, l_i * alpha + tl.sum(p, 1)


@triton.jit
def _attn_weights(s, mb, offs_m, offs_n, rows, cols, smm, smn, scale, fill, m_i, l_i, MASK: tl.constexpr,
                  MASK_FIRST: tl.constexpr, CAUSAL: tl.constexpr, WEIGHTS: tl.constexpr):
    """A key tile's weights from its raw scores: scaled and masked (`_attn_scores`), keys past the
    end and, under CAUSAL, after each query at -inf, then online softmax (WEIGHTS 0: the weights,
    the rescale factor, the running max and sum) or ReLU / sigmoid weights (1, 2: 0 at -inf; the
    factor and sums are returned unchanged, unused)."""
    s = _attn_scores(s, mb, offs_m, offs_n, rows[:, None] & cols[None, :], smm, smn, scale, fill,
                     MASK, MASK_FIRST)
    keep = cols[None, :]
    if CAUSAL:
        keep = keep & (offs_m[:, None] >= offs_n[None, :])
    s = tl.where(keep, s, float("-inf"))
    if WEIGHTS == 0:
        p, alpha, m_i, l_i = _attn_online(s, m_i, l_i)
    else:
        alpha = l_i
        if WEIGHTS == 1:  # noqa: SIM108 - a constexpr branch Triton compiles away
            p = tl.where(s > 0.0, s, 0.0)
        else:
            p = 1.0 / (1.0 + tl.exp(-s))
    return p, alpha, m_i, l_i


def _attn_4d(t, batch):
    """`t` (..., rows, cols) broadcast to `batch` and viewed as (Z, H, rows, cols)."""
    t = t.expand(*batch, *t.shape[-2:])
    if len(batch) > 2:
        return t.reshape(-1, batch[-1], *t.shape[-2:])
    return t.reshape((1,) * (2 - len(batch)) + tuple(t.shape))


def _attn_packed(qkv, heads, batch_first):
    """q, k, v as (B, H, T, hd) views of a packed (B, T, 3E) or (T, B, 3E) projection."""
    parts = qkv.unflatten(-1, (3, heads, qkv.shape[-1] // (3 * heads)))
    order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    return [parts.select(-3, i).permute(order) for i in range(3)]


def _attn_mha_mask(m, b, heads):
    """nn.MultiheadAttention's (T, S) or (B * heads, T, S) mask as a (B, heads | 1, T, S) view."""
    return m if m.dim() == 2 else m.view(b, heads, *m.shape[-2:])


def _attn_split(n: int) -> tuple[int, int]:
    """Block sizes of a head dim `n` (the kernel's BLOCK_D, BLOCK_D1): the largest power of two
    <= n and a power-of-two rest (>= 16, the dot's minimum) where the two pad less than one block
    (80 -> (64, 16), 96 -> (64, 32)); else one padded block and 0 (64 -> (64, 0), 100 -> (128, 0))."""
    full = max(16, _npow2(n))
    d0 = 1 << (int(n).bit_length() - 1) if n >= 1 else 1
    if d0 < n and d0 >= 16:
        d1 = max(16, _npow2(n - d0))
        if d0 + d1 < full:
            return d0, d1
    return full, 0


def _attn_views(q, k, v, m, scale, p):
    """The views every attention launch takes from the reference's form `p` (literal flags from
    the generator: kt (k arrives transposed), packed (heads, batch_first) or None, divide (the
    scores are divided by `scale`), mask mode / fill / mask_first, causal, bthd (write the output
    as (B, T, H, dv) and return its (B, H, T, dv) view), weights (softmax, relu, sigmoid)) ->
    (flat, the output as the caller returns it; None when there is nothing to compute, else the
    kernel's (q4, k4, v4, m4, o) as (Z, H, rows, cols) views, the scale, the mask mode and the
    sizes (Z, H, TQ, TK, D, DV))."""
    packed = p["packed"]
    if packed is not None:
        heads, batch_first = packed
        q, k, v = _attn_packed(q, heads, batch_first)
        if m is not None:
            m = _attn_mha_mask(m, q.shape[0], heads)
    elif p["kt"]:
        k = k.transpose(-2, -1)
    tq, d, tk, dv = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    elif p["divide"]:
        scale = 1.0 / scale
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + ([m.shape[:-2]] if m is not None else [])
    batch = torch.broadcast_shapes(*shapes)
    if packed is not None:
        b, t = q.shape[0], q.shape[2]
        e = heads * dv
        flat = torch.empty((b, t, e) if batch_first else (t, b, e), device=q.device, dtype=q.dtype)
        o4 = flat.unflatten(-1, (heads, dv)).permute((0, 2, 1, 3) if batch_first else (1, 2, 0, 3))
    elif p["bthd"]:
        o4 = torch.empty((batch[0], tq, batch[1], dv), device=q.device, dtype=q.dtype).transpose(1, 2)
        flat = o4
    else:
        flat = torch.empty((*batch, tq, dv), device=q.device, dtype=q.dtype)
        o4 = flat
    q4, k4, v4, o = _attn_4d(q, batch), _attn_4d(k, batch), _attn_4d(v, batch), _attn_4d(o4, batch)
    if m is not None:
        m4 = _attn_4d(m.expand(*m.shape[:-2], tq, tk), batch)
        if m4.dtype == torch.bool:
            m4 = m4.view(torch.uint8)
    else:
        m4 = q4
    if q4.shape[0] * q4.shape[1] * tq == 0:
        return flat, None
    mode = p["mask"] if m is not None else _ATTN_NONE
    dims = (q4.shape[0], q4.shape[1], tq, tk, d, dv)
    return flat, ((q4, k4, v4, m4, o), float(scale), mode, dims)


def _attn_flags(p, mode, d, dv):
    """The kernels' shared constexpr keywords for the form `p`, mask mode and head dims: each head
    dim as one block padded to a power of two, or under split_d as two power-of-two chunks where
    that pads less (`_attn_split`; BLOCK_D1 / BLOCK_DV1 0 where it does not)."""
    if p.get("split_d", False):
        (bd, bd1), (bdv, bdv1) = _attn_split(d), _attn_split(dv)
    else:
        bd, bd1, bdv, bdv1 = max(16, _npow2(d)), 0, max(16, _npow2(dv)), 0
    return dict(MASK=mode, MASK_FIRST=p["mask_first"], CAUSAL=p["causal"],
                WEIGHTS=_ATTN_WEIGHTS[p.get("weights", "softmax")],
                HEAD_MAJOR=bool(p.get("head_major", False)), BLOCK_D=bd, BLOCK_DV=bdv, BLOCK_D1=bd1,
                BLOCK_DV1=bdv1)


def _attn_run(kern, q, k, v, m, scale, p):
    """Attention of one region (`_attn_views` names the form's flags); variants, absent from
    older files: head_major (programs ordered by head, then batch), split_d (head dims split into
    two power-of-two blocks where that pads less, `_attn_split`). One program per (query tile,
    batch x head)."""
    flat, views = _attn_views(q, k, v, m, scale, p)
    if views is None:
        return flat
    (q4, k4, v4, m4, o), scale, mode, (z, h, tq, tk, d, dv) = views
    args = [q4, k4, v4, m4, o, scale, float(p["fill"]), z, h, tq, tk, d, dv,
            *q4.stride(), *k4.stride(), *v4.stride(), *m4.stride(), *o.stride()]
    kern[lambda meta: (_cdiv(tq, meta["BLOCK_M"]), z * h)](
        *args, **_attn_flags(p, mode, d, dv), I64=_i64(q4, k4, v4, m4, o))
    return flat
