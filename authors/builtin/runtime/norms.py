"""Helpers shared by every generated normalization: the launchers' one call (`_nrm_run`: a
launcher is data, see families/norms/emit.py's NormLaunch), their launch plans (the part every
norm shares, `_nrm_planner`, and one planner per kind taking the norm's parameters), layouts of
the normalized dims, config pruning, and the two-level statistics with their combine kernel.
Batch norm's planner is runtime/norm_batch.py, group and instance norm's runtime/norm_groups.py.

Pasted whole into a solution with a norm (runtime.NORMS_RUNTIME), after runtime/common.py, whose
helpers it calls; with a batch norm, runtime/norm_batch.py follows (runtime.NORM_BATCH), with a
group or instance norm runtime/norm_groups.py (runtime.NORM_GROUPS).
"""

import torch
import triton
import triton.language as tl

from .common import _bshape, _cdiv, _chain_args, _i64, _launch, _merge_run, _npow2, _plan_of

_NRM_ROW_MAX = 16384
"""Longest row held in registers (16 warps x 32 fp32 per thread); longer rows go two-level, which
also spreads the statistics of a few long rows over every SM. Rationale: below that, even a few
rows (<= 132 x 64 KB) take ~1 us in one pass, less than the two extra launches of two-level."""

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
def _nrm_stats_plan(A, C, B, gi, tile=4096, programs=1056, min_work=16384, c_inner=False):
    # c_inner: the groups (channels) are x's contiguous run (channels-last), so they fill the
    # tile's coalesced side first. gi: groups per image (a program's groups are of one image).
    if c_inner:
        bc = min(_npow2(gi), 64)
        bb = min(_npow2(B), max(1, tile // bc))
    else:
        bb = min(_npow2(B), tile)
        bc = min(_npow2(gi), max(1, tile // bb), 64)
    ba = min(_npow2(A), max(1, tile // (bb * bc)))
    n_cb = (C // gi) * -(-gi // bc)
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
    two-level statistics then apply, 2 strided columns, 3 apply from running statistics, 4 and 5
    those of 1 and 3 on a channels-last x); the main kernel's size arguments, constexprs and grid,
    an autotuning-pick slot for _launch; the size and stride arguments of the fused prologue and
    epilogue; the statistics plan (_nrm_stats_prep)."""
    return shape, path, args, kw or {}, grid, [], pt, et, sp


def _nrm_stats_prep(A, C, B, sa, sc, sb, mode, eps, i64, pro_kw, running=False, has_nbt=False,
                    momentum=None, gi=None, sgo=0, has_xb=False, xb_values=False, stats=None):
    """Launch plan of _nrm_group_stats for the statistics of C groups, group c being x[a, c, b]
    for all a < A, b < B: (partials' shape; the level-1 grid, arguments, constexprs and autotuning
    pick slot; the combine's grid, arguments and constexprs), sizes and flags only, no tensors.
    Groups come gi to an image (gi None: C), images sgo apart: group n * gi + g starts at
    n * sgo + g * sc, so an instance or group norm reads channels-last x in place.
    `has_xb`: a batch norm's running mean also gets the convolution bias it absorbed; `xb_values`:
    a group norm's values do (x[a, n * gi + g, b] + xb[g * sc + b * sb], a channels-last x's
    channel). `stats`: _nrm_stats_plan's tile / programs where a skill variant sets them
    (families/norms/emit.py), None for its defaults."""
    cumulative = running and momentum is None
    if cumulative and not has_nbt:
        raise ValueError("batch norm with momentum=None needs num_batches_tracked")
    gi = C if gi is None else gi
    ba, bc, bb, a_per, b_per, a_ch, b_ch, n_cb = _nrm_stats_plan(A, C, B, gi, c_inner=sc == 1 and gi > 1,
                                                                 **stats or {})
    n_chunks = a_ch * b_ch
    kw = dict(ABS=mode == 3, HAS_XB=xb_values, I64=i64, BLOCK_A=ba, BLOCK_C=bc, BLOCK_B=bb, **pro_kw)
    # Rationale: the combine is latency-bound, one step per BLOCK_K partials: 128-group programs
    # stepping 32 partials took 17-38 us per batch norm of ~1000 chunks (H200 profiles). 32-group
    # runs (128 B) by up to 4096 // 32 partials cut the steps 4x and spread groups over programs.
    fc = min(_npow2(C), 32)
    fk = min(_npow2(n_chunks), 4096 // fc)
    fin = dict(MODE=mode, RUNNING=running, CUMULATIVE=cumulative, HAS_XB=has_xb, BLOCK_C=fc, BLOCK_K=fk,
               num_warps=8 if fc * fk >= 2048 else 4)
    return ((3, n_chunks, C), (n_cb, n_chunks), (A, C, B, sa, sc, sb, gi, sgo, a_per, b_per, b_ch, n_chunks),
            kw, [],
            (_cdiv(C, fc),), (C, n_chunks, eps, 0.0 if momentum is None else float(momentum)), fin)


def _nrm_group_stats(stats_kernel, sp, x, pro, rm=None, rv=None, nbt=None, xb=None):
    """Level 1 (partials over many programs) and level 2 (combine) of the statistics planned by
    _nrm_stats_prep (`pro`: the fused prologue's operands and arguments); returns a (2, C) tensor
    of (shift, scale). With running statistics it updates them, and num_batches_tracked, in place:
    data, so on every call, never from the plan; `xb`: the bias x lacks, for the running mean."""
    part_shape, grid, args, kw, pick, fgrid, fargs, fkw = sp
    part = torch.empty(part_shape, device=x.device, dtype=torch.float32)
    _launch(stats_kernel, grid, pick, (x, part, part if xb is None else xb, *args, *pro), kw)
    stats = torch.empty((2, fargs[0]), device=x.device, dtype=torch.float32)
    running = fkw["RUNNING"]
    if running and nbt is not None:
        nbt.add_(1)
    # Not autotuned: it updates the running statistics in place, and a benchmarking autotuner
    # would apply the update once per trial.
    _nrm_finalize[fgrid](part, stats, rm if running else stats, rv if running else stats,
                         nbt if fkw["CUMULATIVE"] else stats, stats if xb is None else xb, *fargs, **fkw)
    return stats


def _nrm_apply_plan(n_rows, L, tile=4096, cl=False):
    # Rationale: 4096 elements per program (16 per thread at 8 warps) with rows of the tile
    # contiguous; short rows (BatchNorm1d, 7x7 maps) pack many rows into one tile. Channels-last
    # (n_rows: the channels of one image): both sides of the tile are contiguous runs, one read
    # and one written, so up to 64 channels (256 B) by the pixels that fill the tile.
    if cl:
        br = min(_npow2(n_rows), 64)
        return br, min(_npow2(L), tile // br)
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


def _nrm_run(plans, planner, kernels, ops, dtype, roles, chains, norm):
    """One call of a norm launcher: the plan of the operands' signature (cached; planned per call
    where the layout copies operands), the output allocated, then the planned path's launches.
    `ops`: the input x, or the fused prologue's operands; the present ones of `roles` (names among
    w, b, rm, rv, nbt, xb: weight, bias, running statistics, num_batches_tracked, an absorbed
    convolution bias); the epilogue's
    operands. `chains`: (prologue operands, epilogue operands), None for an absent chain.
    `kernels`: the main kernels the planner's paths use (path 0 the first, path 2 the second;
    the channels-last apply of paths 4 and 5 third from last), then the two-level statistics and
    apply kernels; a pruned one is None, and _launch raises on it. `planner`
    and `norm` (its parameters) plan a new signature (see _nrm_planner)."""
    dev = ops[0].device
    plan, ops = _plan_of(plans, ops, _nrm_planner, dtype, roles, chains, planner, norm)
    shape, path, args, kw, grid, pick, pt, et, sp = plan
    y = _nrm_empty(shape, dev, dtype, kw.get("OUT_CL", False))
    if path < 0:
        return y
    # Indexing by role, not _nrm_split's dict: this runs on every call.
    n = 1 if chains[0] is None else chains[0]
    m = n + len(roles)
    # A prologue computes x from its operands: y stands in for x's pointer.
    x, pro = (ops[0], ()) if chains[0] is None else (y, (*ops[:n], *pt))
    w = ops[n + roles.index("w")] if "w" in roles else y
    b = ops[n + roles.index("b")] if "b" in roles else y
    tail = (*pro, *ops[m:], *et)
    if path in (0, 2):
        _launch(kernels[path // 2], grid, pick, (x, y, w, b, *args, *tail), kw)
        return y
    rm, rv, nbt, xb = (ops[n + roles.index(r)] if r in roles else None for r in ("rm", "rv", "nbt", "xb"))
    # Paths 4 and 5 are 1 and 3 reading a channels-last x: their apply kernel is third from last.
    apply = kernels[-1] if path in (1, 3) else kernels[-3]
    xarg = () if path in (1, 3) else (y if xb is None else xb,)  # the channels-last apply's
    if path in (1, 4):
        st = _nrm_group_stats(kernels[-2], sp, x, pro, rm, rv, nbt, xb)
        _launch(apply, grid, pick, (x, y, st, w, b, st, st, *xarg, *args, *tail), kw)
    else:  # 3, 5: apply with the running statistics
        _launch(apply, grid, pick, (x, y, y, w, b, rm, rv, *xarg, *args, *tail), kw)
    return y


def _nrm_empty(shape, dev, dtype, cl):
    """A norm's output: contiguous, or channels-last where the plan keeps it so (OUT_CL: every
    reader a convolution)."""
    if not cl:
        return torch.empty(shape, device=dev, dtype=dtype)
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    return torch.empty(shape, device=dev, dtype=dtype, memory_format=fmt)


def _nrm_split(ops, roles, chains):
    """A norm launcher's operands as (x or the prologue's operands, {role: operand}, the
    epilogue's operands)."""
    n = 1 if chains[0] is None else chains[0]
    m = n + len(roles)
    return ops[:n], dict(zip(roles, ops[n:m], strict=True)), ops[m:]


def _nrm_planner(ops, dev, dtype, roles, chains, planner, norm):
    """(plan, laid-out ops) of a norm launcher (see _nrm_run) for `ops`: meta tensors, or the
    real operands where the layout copies them. Shared by every norm: the output shape, the fused
    chains' collapsed geometry, int64 offsets and the weight layout; `planner(x, shape, i64,
    prologue constexprs, roles, *norm)` gives the rest: (x as laid out, path, size arguments,
    constexprs, grid, statistics plan)."""
    lead, named, epi = _nrm_split(ops, roles, chains)
    shape = lead[0].shape if chains[0] is None else _bshape(*[t.shape for t in lead])
    y = torch.empty(shape, device="meta", dtype=dtype)
    if y.numel() == 0:
        return _nrm_plan(shape), ops
    none = ([], [], {})
    p_ops, p_args, p_kw = none if chains[0] is None else _chain_args(shape, lead, "p")
    e_ops, e_args, e_kw = none if chains[1] is None else _chain_args(shape, epi, "e")
    # Under a prologue x is never loaded: y stands in for it, with the logical layout.
    x = lead[0] if chains[0] is None else y
    i64 = _i64(x, y, *p_ops, *e_ops)
    # The kernels read weight and bias as flat arrays.
    for r in ("w", "b"):
        if r in named and not named[r].is_contiguous():
            named[r] = named[r].reshape(-1)
    x, path, args, consts, grid, sp = planner(x, shape, i64, p_kw, named, *norm)
    kw = dict(consts, HAS_W="w" in roles, HAS_B="b" in roles, I64=i64, **p_kw, **e_kw)
    pt, et = tuple(p_args[len(p_ops):]), tuple(e_args[len(e_ops):])
    laid = [*(p_ops if chains[0] is not None else [x]), *named.values(), *e_ops]
    return _nrm_plan(shape, path, args, kw, grid, pt, et, sp), laid


def _nrm_rows_plan(x, shape, i64, p_kw, named, d0, d1, mode, eps):
    """layer_norm / rms_norm / normalize over dims [d0:d1] of x (slice bounds: -1, None is the
    last dim): rows in registers (path 0), two-level statistics (1) or strided columns (2)."""
    dims = range(len(shape))[d0:d1]
    d0, d1 = dims.start, dims.stop
    lay = _nrm_layout(shape, x.stride(), d0, d1)
    if lay is None:
        x = x.contiguous()
        lay = _nrm_layout(shape, x.stride(), d0, d1)
    O, R, I, (so, sr, si), (yo, yr, yi) = lay  # noqa: E741 (O x R x I)
    if I == 1 and (sr == 1 or R == 1):
        if R <= _NRM_ROW_MAX:
            grid = lambda meta: (_cdiv(O, meta['ROWS']),)
            return x, 0, (O, R, so, eps, 1, 1, 1), dict(MODE=mode, AFF=2, BLOCK=_npow2(R)), grid, None
        sp = _nrm_stats_prep(1, O, R, 0, so, 1, mode, eps, i64, p_kw)
        br, bl = _nrm_apply_plan(O, R)
        kw = dict(SIDX=0, AFF=2, FROM_RUNNING=False, BLOCK_R=br, BLOCK_L=bl)
        return x, 1, (O, R, so, O, 1, 1, eps), kw, (_cdiv(O, br) * _cdiv(R, bl),), sp
    one, br, bi = _nrm_col_plan(R, I)
    kw = dict(MODE=mode, ONE_PASS=one, BLOCK_R=br, BLOCK_I=bi)
    return x, 2, (O, R, I, so, sr, si, yo, yr, yi, eps), kw, (O * _cdiv(I, bi),), None


def _nrm_channels_last(x):
    """x is a 4-D / 5-D tensor laid out channels-last and not also contiguous (one channel or
    one pixel is both): the layout the channels-last paths read."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
    return fmt is not None and x.is_contiguous(memory_format=fmt) and not x.is_contiguous()


def _nrm_nchw(shape):
    """(N, C, the product of the spatial sizes) of a channels-second shape."""
    hw = 1
    for s in shape[2:]:
        hw *= s
    return shape[0], shape[1], hw


@triton.jit
def _nrm_merge(cnt, mu, m2, AXIS: tl.constexpr):
    """Chan et al.: combine (count, mean, M2) along AXIS without cancellation."""
    n = tl.sum(cnt, axis=AXIS)
    mean = tl.sum(cnt * mu, axis=AXIS) / tl.maximum(n, 1.0)
    d = mu - tl.expand_dims(mean, AXIS)
    return n, mean, tl.sum(m2 + cnt * d * d, axis=AXIS)


@triton.jit
def _nrm_shift_scale(stats, rm, rv, s, m, n_stats, eps, FROM_RUNNING: tl.constexpr):
    """(shift, scale) of the statistics groups `s` (x is normalized as (x - shift) * scale): the
    two-level statistics, or an eval-mode batch norm's running ones. Both apply kernels use it."""
    if FROM_RUNNING:
        shift = tl.load(rm + s, mask=m, other=0.0).to(tl.float32)
        scale = 1.0 / tl.sqrt(tl.load(rv + s, mask=m, other=1.0).to(tl.float32) + eps)
    else:
        shift = tl.load(stats + s, mask=m, other=0.0)
        scale = tl.load(stats + n_stats + s, mask=m, other=0.0)
    return shift, scale


@triton.jit
def _nrm_affine(out, w, b, idx, m, HAS_W: tl.constexpr, HAS_B: tl.constexpr):
    """`out` times w[idx] plus b[idx], each where present (`idx` and mask `m` broadcast against
    `out`): the affine step every norm kernel ends with."""
    if HAS_W:
        out = out * tl.load(w + idx, mask=m, other=0.0).to(tl.float32)
    if HAS_B:
        out = out + tl.load(b + idx, mask=m, other=0.0).to(tl.float32)
    return out


@triton.jit
def _nrm_finalize(part, stats, rm, rv, nbt, xb, C, n_chunks, eps, momentum, MODE: tl.constexpr,
                  RUNNING: tl.constexpr, CUMULATIVE: tl.constexpr, HAS_XB: tl.constexpr,
                  BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr):
    """Level 2: each group's chunk partials -> (shift, scale); x is then normalized as
    (x - shift) * scale. With RUNNING, also the BatchNorm running-statistics update, whose mean
    adds back, with HAS_XB, the convolution bias `xb` that x was computed without."""
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
        if HAS_XB:
            mean += tl.load(xb + cc, mask=cm, other=0.0).to(tl.float32)
        old_m = tl.load(rm + cc, mask=cm, other=0.0)
        tl.store(rm + cc, (1.0 - f) * old_m + f * mean, mask=cm)
        old_v = tl.load(rv + cc, mask=cm, other=0.0)
        tl.store(rv + cc, (1.0 - f) * old_v + f * (m2 / tl.maximum(n - 1.0, 1.0)), mask=cm)
