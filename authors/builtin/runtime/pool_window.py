"""The window kernels' plans (1D-3D): the pooling launchers' (max_pool / avg_pool;
skills/fused-pooling-window), PyTorch's pooling output size, the kernel's size arguments and
constexprs, its grid; and the direct depthwise convolution's one runtime call and plan
(skills/depthwise-conv-direct).

Pasted into a solution with such a launcher (runtime.POOL_WINDOW), after runtime/common.py,
conv_pool.py and pool_plans.py, whose helpers it calls. The window constexprs are named as
families/conv_pool/common.py's WINDOW_CONSTS (test_runtime_modules checks they agree).
"""

import torch

from .common import _bshape, _cdiv, _i64, _launch
from .conv_pool import _cp_pad3, _cp_plan, _cp_planes, _cp_tup
from .pool_plans import _cp_flat


def _window_kw(K3, S3, P3, L3):
    """The window kernels' constexprs: kernel size, stride, padding and dilation per (d, h, w)."""
    return dict(KD=K3[0], KH=K3[1], KW=K3[2], SD=S3[0], SH=S3[1], SW=S3[2], PD=P3[0], PH=P3[1],
                PW=P3[2], DD=L3[0], DH=L3[1], DW=L3[2])


def _pool_out(size, k, s, p, d, ceil):
    """PyTorch's pooling output size (pooling_output_shape), ceil_mode included; without ceil_mode
    also a convolution's."""
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
    kw = dict(_window_kw(K3, S3, P3, L3), CIP=bool(cip), DIV=int(divisor or 0), I64=_i64(out, *ops))
    return (out.shape, out.numel() > 0, None, _cp_flat(src, shape, dims, 6 if pro else 5),
            _cp_flat(epi, out.shape, dims, 6), (c_, D, H, W, OD, OH, OW, R), kw, grid, [])


def _dw_run(plans, kern, attrs, srcs, w, b, epis, dtype, dims, pro):
    """One call of a direct depthwise-convolution launcher: the cached plan of the layer's
    (stride, padding, dilation, groups; hashable: hashable_attr) and the operands' metadata (the
    sources: the input or a prologue's operands; the weight; the epilogue's), then `kern`
    launched on (out, sources, their strides, the weight, the bias, epilogue operands, their
    strides, sizes)."""
    attrs = (*attrs, b is None)
    key = (*attrs, *[m for t in (*srcs, w, *epis) for m in (t.shape, t.stride(), t.dtype, t.device)])
    shape, launch, sargs, eargs, sizes, kw, grid, pick = _cp_plan(
        plans, key, len(attrs), _dw_plan, len(srcs), dims, pro)
    out = torch.empty(shape, device=srcs[0].device, dtype=dtype)
    if launch:
        wc = w.contiguous()
        _launch(kern, grid, pick, (out, *srcs, *sargs, wc, wc if b is None else b, *epis, *eargs, *sizes), kw)
    return out


def _dw_plan(attrs, ops, n_src, dims, pro):
    """Launch plan of _dw_run for its attributes and meta operands `ops` (n_src sources, the
    weight, the epilogue's): output shape, whether to launch (a non-empty output), the source
    and epilogue strides (j too for a prologue's operands), the kernel's size arguments,
    constexprs (window, input channels per group, bias, 64-bit offsets) and grid, and an empty
    autotuning-pick slot."""
    stride, padding, dilation, groups, no_bias = attrs
    src, w, epi = ops[:n_src], ops[n_src], ops[n_src + 1:]
    shape = _bshape(*[t.shape for t in src])
    n_, c_in, (D, H, W) = _cp_planes(shape, dims)
    c_out, cig = w.shape[0], w.shape[1]
    K3 = _cp_pad3(tuple(w.shape[2:]), dims, 1)
    S3 = _cp_pad3(_cp_tup(stride, dims), dims, 1)
    P3 = _cp_pad3(_cp_tup(padding, dims), dims, 0)
    L3 = _cp_pad3(_cp_tup(dilation, dims), dims, 1)
    OD, OH, OW = (_pool_out(i, K3[a], S3[a], P3[a], L3[a], False) for a, i in enumerate((D, H, W)))
    lead = len(shape) - dims
    out = torch.empty((*shape[:lead - 1], c_out, *(OD, OH, OW)[3 - dims:]), device="meta")
    R = OD * OH
    grid = lambda meta: (n_ * c_out * _cdiv(R, meta['BLOCK_R']) * _cdiv(OW, meta['BLOCK_W']),)
    kw = dict(_window_kw(K3, S3, P3, L3), CIG=cig, HAS_BIAS=not no_bias, I64=_i64(out, *src, *epi))
    return (out.shape, out.numel() > 0, _cp_flat(src, shape, dims, 6 if pro else 5),
            _cp_flat(epi, out.shape, dims, 6), (c_out, c_out // groups, D, H, W, OD, OH, OW, R), kw, grid, [])
