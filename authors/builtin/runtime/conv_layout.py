"""The vendor-convolution launchers' one runtime call (families/conv_pool/layout.py, skills
channels-last-layout): the vendor convolution in the layout chosen, then its bias and fused tail in
one pass planned once per output signature (strides, sizes, constexprs, grid).

Pasted into a solution with such a launcher (runtime.CONV_LAYOUT), after runtime/common.py
and conv_pool.py, whose helpers it calls.
"""

import torch

from .common import _cdiv, _i64, _launch
from .conv_pool import _cp_chain, _cp_plan, _cp_planes, _cp_strides


def _cv_layout_run(plans, kern, conv, x, w, b, attrs, epis, dtype, dims, cl, keep):
    """One call of a vendor-convolution launcher: `conv` (F.conv*d or F.conv_transpose*d; `attrs`
    its arguments after the bias, groups 4th in both) on channels-last operands when `cl` and the
    call allows it (no groups, a batch dim), then `kern` adding the bias and the epilogue (operands
    `epis`) in one pass, on the cached plan of the conv output's and the operands' metadata. The
    result is channels-last when `keep` and the call was, else contiguous (the reference's)."""
    cl = cl and attrs[3] == 1 and x.dim() == dims + 2
    if cl:  # cuDNN's TF32 kernels are NHWC (see the channels-last-layout skill)
        fmt = torch.channels_last_3d if dims == 3 else torch.channels_last
        x = x.contiguous(memory_format=fmt)
        w = w.contiguous(memory_format=fmt)
    y = conv(x, w, None, *attrs)
    key = (cl, b is None, *[m for t in (y, *epis) for m in (t.shape, t.stride(), t.dtype, t.device)])
    copy, tail, launch, shape, stride, args, kw, grid, pick = _cp_plan(
        plans, key, 2, _cv_layout_plan, dims, keep)
    if copy:
        y = y.contiguous()
    if not tail:
        return y
    # A fresh output, not in place: the autotuner re-runs the kernel while tuning.
    out = torch.empty_strided(shape, stride, dtype=dtype, device=y.device)
    if launch:
        _launch(kern, grid, pick, (out, y, y if b is None else b, *epis, *args), kw)
    return out


def _cv_layout_plan(args, ops, dims, keep):
    """Launch plan of _cv_layout_run for (channels-last call?, no bias?) and the meta conv output
    and epilogue operands `ops`: (copy the output contiguous first: neither layout gives one pixel
    run, or no tail and not kept; whether a tail pass runs (a bias or an epilogue); whether it
    launches (a non-empty output); the output's shape and strides; the kernel's stride and size
    arguments after the operands; its constexprs; its grid; an empty autotuning-pick slot)."""
    cl, no_bias = args
    y, epis = ops[0], ops[1:]
    tail = not no_bias or bool(epis)
    copy = _cp_strides(y, y.shape, dims)[5] < 0 or not (tail or keep and cl)
    if copy:
        y = y.contiguous()
    if not tail:
        return copy, False, False, None, None, (), {}, None, []
    fmt = torch.contiguous_format
    if keep and cl:  # a reader of the output converts it to channels-last anyway
        fmt = torch.channels_last_3d if dims == 3 else torch.channels_last
    out = torch.empty(y.shape, device="meta", memory_format=fmt)
    n_, c_, (D, H, W) = _cp_planes(y.shape, dims)
    L = D * H * W
    eargs, split = _cp_chain(epis, y.shape, dims)
    sy, so = _cp_strides(y, y.shape, dims), _cp_strides(out, out.shape, dims)
    kw = dict(HAS_BIAS=not no_bias, SPLIT=split, I64=_i64(y, out, *epis))
    grid = lambda meta: (n_ * _cdiv(c_, meta['BLOCK_C']) * _cdiv(L, meta['BLOCK_L']),)
    sargs = (*eargs[len(epis):], c_, L, H, W, sy[0], sy[1], sy[5], so[0], so[1], so[5])
    return copy, True, y.numel() > 0, out.shape, out.stride(), sargs, kw, grid, []
