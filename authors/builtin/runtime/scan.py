"""Launcher-side helpers shared by every generated scan (emitted once per file): how a tensor
is viewed as (outer, scanned, inner), the plan (orientation, blocks, chunks, vector width), and
the launches it makes (grid, arguments and constexprs of each phase), all from metadata so that
a launcher computes them once per operand signature (see families/scan/codegen.py's emit_scan),
and the launcher's one call, `_scan_run` (families/scan/launch.py renders it).

Pasted whole into a solution with a scan (runtime.SCAN_RUNTIME), after runtime/common.py,
whose helpers it calls."""

import math

import torch

from .common import _cdiv, _i64, _launch, _merge_run, _npow2, _plan_of, _sms


def _scan_geometry(t, dim):
    """Strides of `t` viewed as (outer, scanned, inner), or None when the dims do not merge."""
    o = _merge_run(t.shape[:dim], t.stride()[:dim])
    i = _merge_run(t.shape[dim + 1:], t.stride()[dim + 1:])
    if o is None or i is None:
        return None
    return o[1], t.stride(dim), i[1]


def _scan_lanes(meta, ip2, np2):
    """Lanes per program of the lane kernel for a config: the tile is TILE elements, at most
    NP2 (the scanned length rounded up) of them along the scan."""
    steps = min(max(meta['TILE'] // min(meta['LANES'], ip2), 1), np2)
    return min(max(meta['TILE'] // steps, 1), ip2)


def _scan_plan(shape, dim, gx, gy, dev, split, tensors):
    """Orientation, sizes, strides, block and chunking of a scan over `dim` of `shape`."""
    O, N, I = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])  # noqa: E741 (O x N x I)
    (sxo, sxn, sxi), (syo, syn, syi) = gx, gy
    fo, fn, fi = N * I, I, 1
    if I == 1 and O > 1 and sxn != 1 and sxo == 1:
        # A transposed matrix: neighbouring lines are adjacent in memory, so scan them as lanes.
        O, I = 1, O  # noqa: E741
        sxo, sxi, syo, syi, fo, fi = 0, sxo, 0, syo, 0, fo
    rows = I == 1 or (sxn == 1 and sxi != 1)
    if rows:
        block = min(_npow2(N), 2048)
        programs, quantum = O * I, block
    else:
        block = _npow2(I)
        programs, quantum = O * _cdiv(I, min(block, 64)), 64
    sms = _sms(dev, 1)
    chunks = 1
    if split == "always":
        chunks = 3
    elif split == "auto" and programs < 2 * sms:
        # Too few lines to keep every SM streaming: cut lines into chunks (one extra read).
        chunks = min(_cdiv(8 * sms, programs), N // (4 * quantum))
    ch = N
    if chunks > 1:
        ch = _cdiv(_cdiv(N, chunks), quantum) * quantum
        chunks = _cdiv(N, ch)
    if chunks <= 1:
        chunks, ch = 1, N
    i64 = _i64(*tensors, n=O * N * I)
    strides = (sxo, sxn, sxi, syo, syn, syi, fo, fn, fi)
    # Row kernel: the largest VEC dividing every line start and chunk bound (16-byte vectors).
    starts = [N, ch, sxo, syo, fo] + ([sxi, syi, fi] if I > 1 else [])
    vec = next(v for v in (4, 2, 1) if all(s % v == 0 for s in starts))
    return rows, O, N, I, strides, block, vec, chunks, ch, i64


def _scan_launches(shape, dim, gx, gy, dev, split, tensors, kw):
    """The launches of a scan planned by _scan_plan: (row kernel?, size of the chunk-totals
    workspace, grid, size and stride arguments, [(constexprs, autotuning-pick slot)] per launch:
    one, or two phases when lines are chunked). Each phase is its own autotuning key (PHASE), so
    each keeps its own pick (runtime _launch)."""
    rows, O, N, I, strides, block, vec, C, CH, i64 = _scan_plan(  # noqa: E741
        shape, dim, gx, gy, dev, split, tensors)
    L = O * I
    if rows:
        grid = lambda meta: (_cdiv(L, max(meta['TILE'] // block, 1)), C)
        kw = dict(kw, BLOCK_N=block, VEC=vec, LINES2D=I > 1, I64=i64)
    else:
        np2 = min(_npow2(CH), 4096)
        grid = lambda meta: (O * _cdiv(I, _scan_lanes(meta, block, np2)), C)
        kw = dict(kw, IP2=block, NP2=np2, I64=i64)
    steps = [(dict(kw, PHASE=phase), []) for phase in ([0] if C == 1 else [1, 2])]
    return rows, L * C if C > 1 else 1, grid, (L, O, N, I, CH, C, *strides), steps


def _scan_run(plans, planner, kernels, ops, dtype, has_x, chain_ops):
    """One call of a scan launcher: the plan of the operands' signature (cached; planned per call
    where the layout copies operands), the output and the chunk-totals workspace allocated, then
    one launch, or the two phases of a chunked scan, of the row or lane kernel (`kernels`). The
    kernel arguments are x (the first operand, or y when a prologue computes the input: not
    has_x), y, the workspace, the plan's sizes and strides, then per fused chain its operands
    (chain_ops of them, in `ops` order) and its collapsed sizes and strides."""
    dev = ops[0].device
    plan, ops = _plan_of(plans, ops, planner)
    shape, ystride, rows, pn, grid, sargs, steps, cs = plan
    y = torch.empty_strided(shape, ystride, device=dev, dtype=dtype)
    if not steps:
        return y
    part = torch.empty(pn, device=dev, dtype=torch.float32)
    args, at = [ops[0] if has_x else y, y, part, *sargs], int(has_x)
    for n, sizes in zip(chain_ops, cs, strict=True):
        args += [*ops[at:at + n], *sizes]
        at += n
    for kw, pick in steps:  # one launch, or the two phases of a chunked scan
        _launch(kernels[0] if rows else kernels[1], grid, pick, args, kw)
    return y
