"""The global-pooling launchers' plan (adaptive_avg_pool to output size 1;
skills/global-pool-as-row-reduction): output shape, planes and row length, strides, grid.

Pasted into a solution with such a launcher (runtime.POOL_GLOBAL), after runtime/common.py,
conv_pool.py and pool_plans.py, whose helpers it calls.
"""

import torch

from .common import _bshape, _cdiv, _i64
from .conv_pool import _cp_planes, _cp_strides
from .pool_plans import _cp_flat


def _gpool_plan(attrs, ops, n_src, dims):
    """Launch plan of a global-pool launcher (see _cp_run) for meta operands `ops` (n_src source
    operands, then the epilogue's; no attributes): output shape, whether to launch (planes P and
    row length L both non-zero), NaN as the fill otherwise (the mean of no elements; an empty
    output stays empty), source and epilogue strides, the kernel's size arguments and constexprs,
    its grid, and an empty autotuning-pick slot for _launch."""
    src, epi = ops[:n_src], ops[n_src:]
    shape = _bshape(*[t.shape for t in src])
    n_, c_, (D, H, W) = _cp_planes(shape, dims)
    lead = len(shape) - dims
    out = torch.empty((*shape[:lead], *([1] * dims)), device="meta")
    P, L = n_ * c_, D * H * W
    sst = [_cp_strides(t, shape, dims) for t in src]
    kw = dict(SPLIT=any(st[5] < 0 for st in sst), I64=_i64(out, *ops))
    grid = lambda meta: (_cdiv(P, meta['BLOCK_P']),)
    return (out.shape, P > 0 and L > 0, float('nan'), tuple(s for st in sst for s in st),
            _cp_flat(epi, out.shape, dims, 6), (P, c_, L, H, W), kw, grid, [])
