"""The NCHW vendor-convolution launcher's one runtime call (skills/vendor-conv-fused-tail): the
vendor convolution without its bias, then its bias and fused tail in one pass over (planes x
spatial) tiles of the contiguous output, planned once per output signature (stride arguments,
sizes, constexprs, grid).

Pasted into a solution with such a launcher (runtime.CONV_TAIL), after runtime/common.py and
conv_pool.py, whose helpers it calls.
"""

import torch

from .common import _cdiv, _i64, _launch
from .conv_pool import _cp_chain, _cp_plan, _cp_planes


def _cv_tail_run(plans, kern, conv, x, w, b, attrs, epis, dtype, dims):
    """One call of a vendor-convolution launcher with an NCHW tail (skills/vendor-conv-fused-tail):
    `conv` (F.conv*d or F.conv_transpose*d; `attrs` its arguments after the bias) without its
    bias, then `kern` adding the bias and the epilogue (operands `epis`) in one pass over the
    contiguous output, on the cached plan of its and the operands' metadata."""
    y = conv(x, w, None, *attrs).contiguous()
    if b is None and not epis:
        return y
    # A fresh output, not in place: the autotuner re-runs the kernel while tuning.
    out = torch.empty_like(y, dtype=dtype)
    if y.numel() == 0:
        return out
    key = (b is None, *[m for t in (y, *epis) for m in (t.shape, t.stride(), t.dtype, t.device)])
    args, kw, grid, pick = _cp_plan(plans, key, 1, _cv_tail_plan, dims)
    _launch(kern, grid, pick, (out, y, y if b is None else b, *epis, *args), kw)
    return out


def _cv_tail_plan(args, ops, dims):
    """Launch plan of _cv_tail_run for (no bias?,) and the meta conv output and epilogue operands
    `ops`: the kernel's arguments after the operands (their strides, then planes P, channels C,
    pixels L per plane, H, W), its constexprs, its grid and an empty autotuning-pick slot."""
    y, epis = ops[0], ops[1:]
    n_, c_, (D, H, W) = _cp_planes(y.shape, dims)
    P, L = n_ * c_, D * H * W
    eargs, split = _cp_chain(epis, y.shape, dims)
    kw = dict(HAS_BIAS=not args[0], SPLIT=split, I64=_i64(y, *epis))
    grid = lambda meta: (_cdiv(P, meta['BLOCK_P']) * _cdiv(L, meta['BLOCK_L']),)
    return (*eargs[len(epis):], P, c_, L, H, W), kw, grid, []
