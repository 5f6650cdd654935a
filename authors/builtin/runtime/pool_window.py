"""The window-pooling launchers' plan (max_pool / avg_pool, 1D-3D; skills/fused-pooling-window):
PyTorch's pooling output size, the kernel's size arguments and constexprs, its grid.

Pasted into a solution with such a launcher (runtime.POOL_WINDOW), after runtime/common.py,
conv_pool.py and pool_plans.py, whose helpers it calls. The constexpr keywords are
families/conv_pool/common.py's WINDOW_KWARGS, spelt out (test_runtime_modules checks they agree).
"""

import torch

from .common import _bshape, _cdiv, _i64
from .conv_pool import _cp_pad3, _cp_planes, _cp_tup
from .pool_plans import _cp_flat


def _pool_out(size, k, s, p, d, ceil):
    """PyTorch's pooling output size (pooling_output_shape), ceil_mode included."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_plan(attrs, ops, n_src, dims, pro):
    """Launch plan of a window-pooling launcher (see _cp_run) for the layer's (kernel_size,
    stride, padding, dilation, ceil_mode, count_include_pad, divisor_override) and meta operands
    `ops` (n_src source operands, then the epilogue's): output shape, whether to launch (a
    non-empty output), no fill, the source and epilogue strides (j too for a prologue's
    operands), the kernel's size arguments and constexprs, its grid, and an empty
    autotuning-pick slot for _launch."""
    ks, st, pad, dil, ceil, cip, divisor = attrs
    src, epi = ops[:n_src], ops[n_src:]
    shape = _bshape(*[t.shape for t in src])
    k = _cp_tup(ks, dims)
    s = k if st is None or (isinstance(st, (tuple, list)) and len(st) == 0) else _cp_tup(st, dims)
    p, dl = _cp_tup(pad, dims), _cp_tup(1 if dil is None else dil, dims)
    n_, c_, (D, H, W) = _cp_planes(shape, dims)
    K3, S3 = _cp_pad3(k, dims, 1), _cp_pad3(s, dims, 1)
    P3, L3 = _cp_pad3(p, dims, 0), _cp_pad3(dl, dims, 1)
    OD, OH, OW = (_pool_out(i, K3[a], S3[a], P3[a], L3[a], bool(ceil)) for a, i in enumerate((D, H, W)))
    lead = len(shape) - dims
    out = torch.empty((*shape[:lead], *(OD, OH, OW)[3 - dims:]), device="meta")
    R = OD * OH
    grid = lambda meta: (n_ * c_ * _cdiv(R, meta['BLOCK_R']) * _cdiv(OW, meta['BLOCK_W']),)
    kw = dict(KD=K3[0], KH=K3[1], KW=K3[2], SD=S3[0], SH=S3[1], SW=S3[2], PD=P3[0], PH=P3[1],
              PW=P3[2], DD=L3[0], DH=L3[1], DW=L3[2],
              CIP=bool(cip), DIV=int(divisor or 0), I64=_i64(out, *ops))
    return (out.shape, out.numel() > 0, None, _cp_flat(src, shape, dims, 6 if pro else 5),
            _cp_flat(epi, out.shape, dims, 6), (c_, D, H, W, OD, OH, OW, R), kw, grid, [])
