"""Helpers shared by every generated normalization: layouts of the normalized dims, config
pruning, launch plans, and the two-level statistics' combine kernel.

Pasted whole into a solution with a norm (runtime.NORMS_RUNTIME), after runtime/common.py, whose
helpers it calls.
"""

import torch
import triton
import triton.language as tl

from .common import _cdiv, _launch, _merge_run, _npow2


def _nrm_cstrides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def _nrm_merge_dims(shape, strides, dims):
    """(size, stride) of `dims` merged into one dim, or None when their strides do not merge."""
    return _merge_run([shape[d] for d in dims], [strides[d] for d in dims])


def _nrm_layout(shape, xs, d0, d1):
    """x seen as (O, R, I) with the reduction over R = dims [d0, d1): sizes, x strides and the
    strides of the contiguous output; None when x must be made contiguous first. A view whose
    reduced dim is strided (a transposed layer norm) takes I from its contiguous leading dims, so
    the kernel reads it coalesced instead of copying it."""
    n = len(shape)
    ys = _nrm_cstrides(shape)
    red = list(range(d0, d1))
    rx, ry = _nrm_merge_dims(shape, xs, red), _nrm_merge_dims(shape, ys, red)
    if rx is None:
        return None
    lead, trail = list(range(d0)), list(range(d1, n))
    splits = [(lead, trail, False)]
    if rx[1] != 1 and rx[0] > 1 and all(shape[d] == 1 for d in trail):
        splits = [(lead[:k], lead[k:], True) for k in range(len(lead) - 1, -1, -1)] + splits
    for od, idims, need_unit in splits:
        ox, oy = _nrm_merge_dims(shape, xs, od), _nrm_merge_dims(shape, ys, od)
        ix, iy = _nrm_merge_dims(shape, xs, idims), _nrm_merge_dims(shape, ys, idims)
        if None in (ox, oy, ix, iy) or (need_unit and ix[1] != 1):
            continue
        return ox[0], rx[0], ix[0], (ox[1], rx[1], ix[1]), (oy[1], ry[1], iy[1])
    return None


def _nrm_prune(configs, named_args, **kw):
    """Keep configs giving each thread 4-32 elements of the tile: fewer starves the loads, more
    spills registers. ROWS > 1 only packs short rows (tile <= 4096)."""
    tile = 1
    for k, v in kw.items():
        if k.startswith("BLOCK"):
            tile *= v
    keep = []
    for c in configs:
        rows = c.kwargs.get("ROWS", 1)
        if rows > 1 and rows * tile > 4096:
            continue
        per_thread = rows * tile / (32 * c.num_warps)
        if 4 <= per_thread <= 32:
            keep.append(c)
    if keep:
        return keep
    one = [c for c in configs if c.kwargs.get("ROWS", 1) == 1]
    return [min(one or configs, key=lambda c: abs(tile / (32 * c.num_warps) - 16))]


# Rationale (H200: 132 SMs, 4.3 TB/s): a 4096-element tile per loop step is 16 fp32 values per
# thread per Welford array at 8 warps (8 at 16); ~8 programs per SM (1056) keep enough loads in
# flight to stream at DRAM speed, and >= 16K elements per program amortise the partial stores and
# the combine. Short contiguous runs (B small) put channels side by side so each row of the tile
# stays a contiguous segment (BatchNorm1d: [64 rows x 64 channels]).
def _nrm_stats_plan(A, C, B, tile=4096, programs=1056, min_work=16384):
    bb = min(_npow2(B), tile)
    bc = min(_npow2(C), max(1, tile // bb), 64)
    ba = min(_npow2(A), max(1, tile // (bb * bc)))
    n_cb = -(-C // bc)
    want = max(1, min(-(-programs // n_cb), (A * B * bc) // min_work))
    na = -(-A // ba)
    a_ch = min(na, want)
    a_per = -(-na // a_ch) * ba
    a_ch = -(-A // a_per)
    nb = -(-B // bb)
    b_ch = min(nb, max(1, -(-want // a_ch)))
    b_per = -(-nb // b_ch) * bb
    b_ch = -(-B // b_per)
    return ba, bc, bb, a_per, b_per, a_ch, b_ch, n_cb


def _nrm_plan(shape, path=-1, args=(), kw=None, grid=None, pt=(), et=(), sp=None):
    """A norm launcher's plan: output shape; path (-1 empty output, 0 rows in registers, 1
    two-level statistics then apply, 2 strided columns, 3 apply from running statistics); the main
    kernel's size arguments, constexprs and grid, an autotuning-pick slot for _launch; the size
    and stride arguments of the fused prologue and epilogue; the statistics plan (_nrm_stats_prep)."""
    return shape, path, args, kw or {}, grid, [], pt, et, sp


def _nrm_stats_prep(A, C, B, sa, sc, sb, mode, eps, i64, pro_kw, running=False, has_nbt=False,
                    momentum=None):
    """Launch plan of _nrm_group_stats for the statistics of C groups, group c being x[a, c, b]
    for all a < A, b < B: (partials' shape; the level-1 grid, arguments, constexprs and autotuning
    pick slot; the combine's grid, arguments and constexprs), sizes and flags only, no tensors."""
    cumulative = running and momentum is None
    if cumulative and not has_nbt:
        raise ValueError("batch norm with momentum=None needs num_batches_tracked")
    ba, bc, bb, a_per, b_per, a_ch, b_ch, n_cb = _nrm_stats_plan(A, C, B)
    n_chunks = a_ch * b_ch
    kw = dict(ABS=mode == 3, I64=i64, BLOCK_A=ba, BLOCK_C=bc, BLOCK_B=bb, **pro_kw)
    fin = dict(MODE=mode, RUNNING=running, CUMULATIVE=cumulative, BLOCK_C=128,
               BLOCK_K=min(_npow2(n_chunks), 32), num_warps=4)
    return ((3, n_chunks, C), (n_cb, n_chunks), (A, C, B, sa, sc, sb, a_per, b_per, b_ch, n_chunks), kw, [],
            (_cdiv(C, 128),), (C, n_chunks, eps, 0.0 if momentum is None else float(momentum)), fin)


def _nrm_group_stats(stats_kernel, sp, x, pro, rm=None, rv=None, nbt=None):
    """Level 1 (partials over many programs) and level 2 (combine) of the statistics planned by
    _nrm_stats_prep (`pro`: the fused prologue's operands and arguments); returns a (2, C) tensor
    of (shift, scale). With running statistics it updates them, and num_batches_tracked, in place:
    data, so on every call, never from the plan."""
    part_shape, grid, args, kw, pick, fgrid, fargs, fkw = sp
    part = torch.empty(part_shape, device=x.device, dtype=torch.float32)
    _launch(stats_kernel, grid, pick, (x, part, *args, *pro), kw)
    stats = torch.empty((2, fargs[0]), device=x.device, dtype=torch.float32)
    running = fkw["RUNNING"]
    if running and nbt is not None:
        nbt.add_(1)
    # Not autotuned: it updates the running statistics in place, and a benchmarking autotuner
    # would apply the update once per trial.
    _nrm_finalize[fgrid](part, stats, rm if running else stats, rv if running else stats,
                         nbt if fkw["CUMULATIVE"] else stats, *fargs, **fkw)
    return stats


def _nrm_apply_plan(n_rows, L, tile=4096):
    # Rationale: 4096 elements per program (16 per thread at 8 warps) with rows of the tile
    # contiguous; short rows (BatchNorm1d, 7x7 maps) pack many rows into one tile.
    bl = min(_npow2(L), tile)
    return min(_npow2(n_rows), max(1, tile // bl)), bl


def _nrm_col_plan(R, I):  # noqa: E741 (R x I, the names of _nrm_layout)
    # Rationale: the whole reduced extent in registers (<= 8192 fp32 per program) reads x once;
    # >= 8 contiguous positions per reduced index keep each load a full 32-byte sector. Longer
    # reductions loop twice over [64 x 64] tiles; the second read mostly hits L2.
    br = _npow2(R)
    bi = min(_npow2(I), max(8, 8192 // br))
    if br * bi <= 8192:
        return True, br, bi
    bi = min(_npow2(I), 64)
    return False, max(1, 4096 // bi), bi


@triton.jit
def _nrm_merge(cnt, mu, m2, AXIS: tl.constexpr):
    """Chan et al.: combine (count, mean, M2) along AXIS without cancellation."""
    n = tl.sum(cnt, axis=AXIS)
    mean = tl.sum(cnt * mu, axis=AXIS) / tl.maximum(n, 1.0)
    d = mu - tl.expand_dims(mean, AXIS)
    return n, mean, tl.sum(m2 + cnt * d * d, axis=AXIS)


@triton.jit
def _nrm_finalize(part, stats, rm, rv, nbt, C, n_chunks, eps, momentum, MODE: tl.constexpr,
                  RUNNING: tl.constexpr, CUMULATIVE: tl.constexpr, BLOCK_C: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    """Level 2: each group's chunk partials -> (shift, scale); x is then normalized as
    (x - shift) * scale. With RUNNING, also the BatchNorm running-statistics update."""
    cc = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cm = cc < C
    n = tl.zeros([BLOCK_C], dtype=tl.float32)
    mean = tl.zeros([BLOCK_C], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_C], dtype=tl.float32)
    for k0 in range(0, n_chunks, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        m = (kk < n_chunks)[:, None] & cm[None, :]
        off = kk[:, None] * C + cc[None, :]
        nk = tl.load(part + off, mask=m, other=0.0)
        muk = tl.load(part + n_chunks * C + off, mask=m, other=0.0)
        m2k = tl.load(part + 2 * n_chunks * C + off, mask=m, other=0.0)
        nb, mub, m2b = _nrm_merge(nk, muk, m2k, 0)
        tot = n + nb
        delta = mub - mean
        frac = nb / tl.maximum(tot, 1.0)
        mean = mean + delta * frac
        m2 = m2 + m2b + delta * delta * n * frac
        n = tot
    shift = tl.zeros([BLOCK_C], dtype=tl.float32)
    if MODE == 0:
        shift = mean
        scale = 1.0 / tl.sqrt(m2 / n + eps)
    elif MODE == 1:
        scale = 1.0 / tl.sqrt(m2 / n + mean * mean + eps)
    elif MODE == 2:
        scale = 1.0 / tl.maximum(tl.sqrt(m2 + n * mean * mean), eps)
    else:
        scale = 1.0 / tl.maximum(n * mean, eps)
    tl.store(stats + cc, shift, mask=cm)
    tl.store(stats + C + cc, scale, mask=cm)
    if RUNNING:
        if CUMULATIVE:  # noqa: SIM108 (unchanged text keeps Triton's cache key)
            f = 1.0 / tl.load(nbt).to(tl.float32)
        else:
            f = momentum
        old_m = tl.load(rm + cc, mask=cm, other=0.0)
        tl.store(rm + cc, (1.0 - f) * old_m + f * mean, mask=cm)
        old_v = tl.load(rv + cc, mask=cm, other=0.0)
        tl.store(rv + cc, (1.0 - f) * old_v + f * (m2 / tl.maximum(n - 1.0, 1.0)), mask=cm)
