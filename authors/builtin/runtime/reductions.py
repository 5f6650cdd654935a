"""Helpers every generated reduction / softmax / loss file shares.

Launcher side: `_red_layout` views the reduced space of any (broadcast, strided) operands as
O x K x I -- output index `o * I + i`, reduced index `k` -- with each of O, K, I at most two
collapsed dims per operand, so kernels address views and broadcasts without copies;
common.py's `_i64` decides their offset width. A reduction or loss launcher is one call of
`_red_run`, a softmax launcher one of `_red_sm_run`: plan lookup, allocations and launches, with
the plans (`_red_plan`, `_red_sm_plan`: tiles, split, constexprs) made from metadata and the
launcher's literal parameters, once per operand signature. Kernel side: `_red_off` (offset of a two-dim
group) and the associative combine functions of the reducers, used both across the lanes of a
tile (`tl.reduce`) and across the partials of a split reduction.

Pasted whole into a solution with a reduction, softmax or loss (runtime.REDUCTIONS_RUNTIME),
after runtime/common.py, whose helpers it calls.
"""

import math

import torch
import triton
import triton.language as tl

from .common import _bshape, _cdiv, _chain_args, _i64, _launch, _merge_dims, _npow2, _plan_of, _sms


def _red_groups(shape, groups, strides):
    """Collapse each group of logical dims (common.py's _merge_dims) to at most two dims.
    Returns [(total, inner size, two dims?)] per group and, per tensor, [outer stride, inner
    stride] per group; None if a group needs more."""
    sizes, out = [], [[] for _ in strides]
    for g in groups:
        sz, st = _merge_dims([shape[d] for d in g], [[s[d] for d in g] for s in strides])
        if len(sz) > 2:
            return None
        total = 1
        for n in sz:
            total *= n
        sizes.append((total, sz[-1] if sz else 1, len(sz) == 2))
        for t, s in enumerate(st):
            out[t] += [0] * (2 - len(s)) + s
    return sizes, out


def _red_layout(shape, dims, tensors):
    """Operands broadcast over `shape`, reduced over `dims` (sorted), as (tensors, O, K, I,
    strides, swapped): O/K/I are (total, inner size, two dims?), strides[t] is [o0, o1, k0, k1,
    i0, i1], and swapped says the kept dims were moved from O to I (see below).
    The output is contiguous in the kept dims' order: index o * I + i. Views that do not fit two
    dims per group are materialised (rare: e.g. reducing dims 0, 2 and 4 of a 5-D tensor)."""
    nd = len(shape)
    kept = [d for d in range(nd) if d not in dims]
    if dims == list(range(dims[0], dims[-1] + 1)):
        groups = [list(range(dims[0])), list(dims), list(range(dims[-1] + 1, nd))]
    else:
        groups = [kept, list(dims), []]
    lay = _red_groups(shape, groups, [list(t.expand(shape).stride()) for t in tensors])
    if lay is None:
        tensors = [t.expand(shape).contiguous() for t in tensors]
        lay = _red_groups(shape, groups, [list(t.stride()) for t in tensors])
    if lay is None:
        perm = kept + list(dims)
        tensors = [t.expand(shape).permute(perm).contiguous() for t in tensors]
        shape = [shape[d] for d in perm]
        groups = [list(range(len(kept))), list(range(len(kept), nd)), []]
        lay = _red_groups(shape, groups, [list(t.stride()) for t in tensors])
    (o, k, i), strides = lay
    swapped = i[0] == 1
    if swapped:
        # Nothing after the reduced dims: the kept dims play the role of I (o = 0), so a kernel
        # walking I with unit stride covers column reductions such as x.sum(0) and x.t().sum(1).
        o, i = (1, 1, False), o
        strides = [[0, 0, s[2], s[3], s[0], s[1]] for s in strides]
    return tensors, o, k, i, strides, swapped


def _red_align(*strides):
    """Largest power of two (at most 16) dividing every non-zero stride: what a kernel may assume
    (tl.multiple_of) about offsets built from them."""
    a = 16
    for s in strides:
        while s and s % a:
            a //= 2
    return a


def _red_aligns(st, col, K, I):  # noqa: E741 (O x K x I, the names of _red_layout)
    """Alignment constexprs (elements) of the offsets that are not contiguous in the tile: A{j}
    of operand j's row bases for row tiles, its reduced-dim offsets for column tiles; AK, AI."""
    al = {f'A{j}': _red_align(*(t[0:2] + (t[2:4] if col else t[4:6]))) for j, t in enumerate(st)}
    al.update(AK=_red_align(K) if K > 1 else 1, AI=_red_align(I) if I > 1 else 1)
    return al


def _red_col(ops, st, I):  # noqa: E741
    """Column tiles when the largest operand is contiguous along the kept dims, not the reduced."""
    big = max(range(len(ops)), key=lambda j: ops[j].numel())
    return I > 1 and st[big][5] == 1 and st[big][3] != 1


def _red_blocks(col, M, K, O, I, p):  # noqa: E741
    """(BLOCK_R, BLOCK_K, programs) of row or column tiles within the planner parameters `p`
    (tile: elements per tile, kmax: longest loop step, imax: widest column strip)."""
    kp = _npow2(max(K, 1))
    if col:
        br = min(_npow2(I), p['imax'])
        bk = max(1, min(p['tile'] // br, kp, p['kmax']))
        return br, bk, O * _cdiv(I, br)
    bk = min(kp, p['kmax'])
    br = max(1, min(p['tile'] // bk, _npow2(M)))
    return br, bk, _cdiv(M, br)


def _red_split(K, BK, progs, dev, p):
    """(programs per row, chunk length) of a split of K: p['chunk'] elements a chunk or
    p['split'] chunks when forced, otherwise enough to give ~p['waves'] programs per SM when the
    rows alone leave SMs idle. Chunks are whole multiples of BK."""
    nk = _cdiv(K, BK)
    split = 1
    if p['chunk']:
        split = _cdiv(K, p['chunk'])
    elif p['split']:
        split = p['split']
    else:
        sms = _sms(dev, 4)
        if progs < sms and nk >= 8:
            split = min(_cdiv(p['waves'] * sms, progs), _cdiv(nk, 4))
    split = max(1, min(split, nk))
    if split == 1:
        return 1, K
    ch = _cdiv(nk, split) * BK
    return _cdiv(K, ch), ch


def _red_plan(ops, dev, dims, keepdim, scalar, div, splittable, p):
    """Launch plan of a reduction over `dims` (families/reductions/codegen.py): (output shape, M
    output elements, size and stride arguments, constexprs, column tiles?, programs, programs
    per row, int64 offsets?, autotuning-pick slot), and the operands as laid out. A scalar
    reduction's output is 0-dim; DIV is K, or shape[div] where the mean divides by one dim."""
    shape = list(_bshape(*[t.shape for t in ops]))
    kept = [d for d in range(len(shape)) if d not in dims]
    M = math.prod(shape[d] for d in kept)
    out_shape = [] if scalar else [1 if d in dims else shape[d] for d in range(len(shape))] if keepdim \
        else [shape[d] for d in kept]
    if M == 0:
        return (out_shape, 0, (), {}, False, 0, 1, False, []), ops
    ops, (O, O1, O2), (K, K1, K2), (I, I1, I2), st, _ = _red_layout(shape, dims, ops)  # noqa: E741
    i64 = _i64(*ops, n=math.prod(shape))
    col = _red_col(ops, st, I)
    BR, BK, progs = _red_blocks(col, M, K, O, I, p)
    split, CH = _red_split(K, BK, progs, dev, p) if splittable else (1, K)
    kw = dict(O2=O2, K2=K2, I2=I2, I64=i64, SPLIT=split > 1, BLOCK_R=BR, BLOCK_K=BK,
              **_red_aligns(st, col, K, I))
    sargs = (M, K, I, O1, K1, I1, CH, float(K if div is None else shape[div]), *[s for t in st for s in t])
    return (out_shape, M, sargs, kw, col, progs, split, i64, []), ops


def _red_run(plans, kernels, ops, eops, dtypes, dims, keepdim, states, p, splittable=False, index=(),
             scalar=None, div=None, unsqueeze=None, chain=False, pair=None):
    """One call of a reduction launcher (families/reductions/codegen.py): the plan (_red_plan with
    the launcher's dims, keepdim, scalar, div, splittable and planner parameters p), one output per
    dtype of `dtypes`, then the main kernel (kernels[0] row tiles, kernels[1] column tiles), the
    combine kernel kernels[2] when K is split (workspaces for the `states` row states, those at
    `index` positions of index dtype), and the tail kernels[-1] of a scalar ('sum' / 'mean')
    reduction. `unsqueeze` (operand, dim): that operand (a loss's targets or labels) gets the
    reduced dim back; `chain`: an epilogue reads the operands `eops`; `pair` 'max' / 'min':
    the results as torch.return_types (values, indices)."""
    if unsqueeze is not None:
        ops = [t.unsqueeze(unsqueeze[1]) if j == unsqueeze[0] else t for j, t in enumerate(ops)]
    plan, ops = _plan_of(plans, ops, _red_plan, dims, keepdim, scalar, div, splittable, p)
    out_shape, M, sargs, kw, col, progs, split, i64, pick = plan
    dev = ops[0].device
    outs = [torch.empty(out_shape, device=dev, dtype=dt) for dt in dtypes]
    if M == 0:
        return outs[0].fill_(float('nan') if scalar == 'mean' else 0.0) if scalar else _red_result(outs, pair)
    if split > 1:
        ix = torch.int64 if i64 else torch.int32
        ws = [torch.empty((split, M), device=dev, dtype=ix if j in index else torch.float32)
              for j in range(states)]
    else:
        ws = outs[:1] * states
    tp = [torch.empty(progs, device=dev, dtype=torch.float32) for _ in range(2)] if scalar else outs[:1] * 2
    _, e_args, e_kw = _chain_args(out_shape, eops, 'e') if chain else ((), [], {})
    _launch(kernels[1 if col else 0], (progs, split), pick, (*outs, *ws, *tp, *ops, *sargs, *e_args),
            {**kw, **e_kw})
    if split > 1:  # sargs[1], sargs[7]: K and DIV
        cb = min(_npow2(M), 1024)
        _launch(kernels[2], (_cdiv(M, cb),), [], (*outs, *ws, M, split, sargs[1], sargs[7], *e_args),
                dict(e_kw, BLOCK_R=cb))
    if scalar:
        _launch(kernels[-1], (1,), [], (outs[0], *tp, progs, *e_args),
                dict(e_kw, MEAN=scalar == 'mean', BLOCK=1024))
        return outs[0]
    return _red_result(outs, pair)


def _red_result(outs, pair):
    """A reduction's return value: the output, or (values, indices) as torch.max / torch.min give them."""
    if pair == 'max':
        return torch.return_types.max(tuple(outs))
    if pair == 'min':
        return torch.return_types.min(tuple(outs))
    return outs[0]


def _red_sm_plan(ops, dev, dim, p):
    """Launch plan of a softmax over `dim` (families/reductions/softmax.py): (shape, M rows, mode,
    column tiles?, programs, programs per row, the statistics kernels' and the main kernel's size
    and stride arguments and constexprs, their autotuning-pick slots), and the operands as laid
    out. Mode 0 when a row fits one tile (p['single']), 1 when it loops, 2 when K is split."""
    shape = list(_bshape(*[t.shape for t in ops]))
    if math.prod(shape) == 0:
        return (shape, 0, 0, False, 0, 1, (), (), {}, {}, [], []), ops
    ops, (O, O1, O2), (K, K1, K2), (I, I1, I2), st, swapped = _red_layout(shape, [dim], ops)  # noqa: E741
    OS = (0, 1, K) if swapped else (K * I, I, 1)  # output strides of the (o, k, i) roles: logical order
    M, i64 = O * I, _i64(*ops, n=math.prod(shape))
    col = _red_col(ops, st, I)
    KP = _npow2(max(K, 1))
    mode = 1 if p['single'] < KP or 0 < p['chunk'] < K else 0
    if mode == 0 and col:  # the whole row in one tile: as many column strips as fit beside it
        BK, BR = KP, max(1, min(_npow2(I), p['imax'], p['tile'] // KP))
        progs = O * _cdiv(I, BR)
    else:
        BR, BK, progs = _red_blocks(col, M, K, O, I, dict(p, kmax=KP) if mode == 0 else p)
    split, CH = _red_split(K, BK, progs, dev, p) if mode == 1 else (1, K)
    if split > 1:
        mode = 2
    AO = _red_align(OS[0], OS[1]) if col else _red_align(OS[0], OS[2])
    stv = [s for t in st for s in t]
    kw = dict(O2=O2, K2=K2, I2=I2, I64=i64, BLOCK_R=BR, BLOCK_K=BK, **_red_aligns(st, col, K, I))
    return (shape, M, mode, col, progs, split, (M, K, I, O1, K1, I1, CH, 1.0, *stv),
            (M, K, I, O1, K1, I1, CH, split, *OS, *stv), dict(kw, SPLIT=True),
            dict(kw, AO=AO, MODE=mode), [], []), ops


def _red_sm_run(plans, kernels, ops, eops, dtype, dim, p, chain=False):
    """One call of a softmax launcher: the plan (_red_sm_plan), the output, then in mode 2 the
    split statistics (kernels[2] row tiles, kernels[3] column tiles) into two (split, M)
    workspaces, and the softmax kernel (kernels[0] row tiles, kernels[1] column tiles); `chain`:
    an epilogue reads the operands `eops`."""
    plan, ops = _plan_of(plans, ops, _red_sm_plan, dim, p)
    shape, M, mode, col, progs, split, sargs, margs, skw, mkw, spick, pick = plan
    out0 = torch.empty(shape, device=ops[0].device, dtype=dtype)
    if M == 0:
        return out0
    ws0 = ws1 = out0
    if mode == 2:
        ws0, ws1 = [torch.empty((split, M), device=out0.device, dtype=torch.float32) for _ in range(2)]
        _launch(kernels[3 if col else 2], (progs, split), spick, (out0, ws0, ws1, out0, out0, *ops, *sargs),
                skw)
    _, e_args, e_kw = _chain_args(shape, eops, 'e') if chain else ((), [], {})
    _launch(kernels[1 if col else 0], (progs, split), pick, (out0, ws0, ws1, *ops, *margs, *e_args),
            {**mkw, **e_kw})
    return out0


@triton.jit
def _red_off(idx, D1, s0, s1, TWO: tl.constexpr):
    """Element offset of index `idx` in a group of one dim (stride s1) or two dims (inner size
    D1, strides s0, s1)."""
    if TWO:  # noqa: SIM108 (unchanged text keeps Triton's cache keys of its callers)
        off = (idx // D1) * s0 + (idx % D1) * s1
    else:
        off = idx * s1
    return off


@triton.jit
def _red_hint(n, A: tl.constexpr):
    """n, which the launcher checked is a multiple of A, rebuilt as (n // A) * A: the compiler then
    knows its divisibility (a hint on a kernel argument itself is dropped), so masks against it
    stay uniform over vector loads."""
    if A > 1:
        n = (n // A) * A
    return n


@triton.jit
def _red_add(a, b):
    return a + b


@triton.jit
def _red_mul(a, b):
    return a * b


@triton.jit
def _red_max(a, b):
    # NaN wins, as in torch.amax / torch.max.
    return tl.where((b > a) | (b != b), b, a)


@triton.jit
def _red_min(a, b):
    return tl.where((b < a) | (b != b), b, a)


@triton.jit
def _red_argmax(v1, i1, v2, i2):
    # The larger value; NaN counts as the largest; ties keep the first index (PyTorch's rule).
    take = (v2 > v1) | ((v2 != v2) & (v1 == v1)) | (((v2 == v1) | ((v1 != v1) & (v2 != v2))) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def _red_argmin(v1, i1, v2, i2):
    take = (v2 < v1) | ((v2 != v2) & (v1 == v1)) | (((v2 == v1) | ((v1 != v1) & (v2 != v2))) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def _red_lse(m1, s1, m2, s2):
    # (running max, sum of exp(x - shift)); the shift is the max, or 0 when the max is infinite
    # (torch.logsumexp's rule: +inf stays +inf, a row of -inf gives -inf, no inf - inf NaN).
    # The shift is finite: a state of -inf contributes s * 0, and a NaN sum propagates.
    m = tl.maximum(m1, m2)
    sh = tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)
    return m, s1 * tl.exp(m1 - sh) + s2 * tl.exp(m2 - sh)


@triton.jit
def _red_lse_shift(m):
    return tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)


@triton.jit
def _red_welford(n1, mean1, q1, n2, mean2, q2):
    # Chan et al.'s parallel update of (count, mean, sum of squared deviations).
    n = n1 + n2
    w = tl.where(n == 0, 0.0, n2 / tl.where(n == 0, 1.0, n))
    d = mean2 - mean1
    return n, mean1 + d * w, q1 + q2 + d * d * n1 * w
