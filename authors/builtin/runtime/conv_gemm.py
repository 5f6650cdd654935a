"""The implicit-GEMM convolution launchers' one runtime call (families/conv_pool/gemm.py): the layer's
geometry (output size, GEMM sizes, grid), the weight's permutation, how the operands are prepared
and the kernel's arguments, planned once per operand signature and layer attributes; per call only
the output, the permuted weight, the operand parts and the launch.

How operands reach the tensor cores is the launcher's `parts` planner: `_cv_one_pass` here (one TF32
pass, operands as they are), or conv_parts.py's prepared hi / lo parts (strict fp32).

Pasted into a solution with such a launcher (runtime.CONV_GEMM), after runtime/common.py
and conv_pool.py, whose helpers it calls.
"""

import torch

from .common import _cdiv, _i64, _launch
from .conv_pool import _cp_chain, _cp_pad3, _cp_plan, _cp_planes, _cp_strides, _cp_tup


def _cv_gemm_run(plans, kern, parts, x, w, b, attrs, epis, dtype, dims, transposed):
    """One call of an implicit-GEMM conv launcher: `attrs` are the layer's (stride, padding,
    dilation, groups), or (stride, padding, output_padding, groups, dilation) when `transposed`
    (F.conv*d's and F.conv_transpose*d's arguments after the bias); `epis` the fused epilogue's
    operands. The plan (see _cv_gemm_plan) is cached per attributes, bias presence and operand
    metadata; `kern` runs on (out, the six operand parts, bias, epilogue operands, the plan's args)."""
    key = (*attrs, b is None, *[m for t in (x, w, *epis) for m in (t.shape, t.stride(), t.dtype, t.device)])
    shape, launch, wview, wperm, ops_fn, prep, args, kw, grid, pick = _cp_plan(
        plans, key, len(attrs) + 1, _cv_gemm_plan, parts, dims, transposed)
    out = torch.empty(shape, device=x.device, dtype=dtype)
    if not launch:
        return out
    # (taps, C_out, C_in per group): a weight tile's K run (input channels) is contiguous
    ops = ops_fn(x, w, w.reshape(wview).permute(wperm).contiguous(), prep)
    _launch(kern, grid, pick, (out, *ops, ops[3] if b is None else b, *epis, *args), kw)
    return out


def _cv_gemm_plan(args, ops, parts, dims, transposed):
    """Launch plan of _cv_gemm_run for its key's attributes and meta operands (x, w, epilogue's):
    (output shape, launch? (a non-empty output), the weight's view and permutation to (taps,
    C_out, C_in per group), parts' operand function and its plan, the kernel's arguments after
    the epilogue operands, its constexprs, its grid, an empty autotuning-pick slot)."""
    *attrs, no_bias = args
    x, w, epis = ops[0], ops[1], ops[2:]
    dil, opad = (attrs[4], attrs[2]) if transposed else (attrs[2], 0)
    groups = attrs[3]
    n_, c_in, (D, H, W) = _cp_planes(x.shape, dims)
    K3 = _cp_pad3(tuple(w.shape[2:]), dims, 1)
    S3, P3 = _cp_pad3(_cp_tup(attrs[0], dims), dims, 1), _cp_pad3(_cp_tup(attrs[1], dims), dims, 0)
    L3, OP3 = _cp_pad3(_cp_tup(dil, dims), dims, 1), _cp_pad3(_cp_tup(opad, dims), dims, 0)
    kt = K3[0] * K3[1] * K3[2]
    if transposed:
        cig, cog = c_in // groups, w.shape[1]
        c_out = cog * groups
        OD, OH, OW = ((i - 1) * S3[a] - 2 * P3[a] + L3[a] * (K3[a] - 1) + OP3[a] + 1
                      for a, i in enumerate((D, H, W)))
        wview, wperm, wbound = (groups, cig, cog, kt), (3, 0, 2, 1), ((groups, cig, cog, kt), (1, 3))
        M = n_ * _cdiv(OD, S3[0]) * _cdiv(OH, S3[1]) * _cdiv(OW, S3[2])
        grid_g = groups * S3[0] * S3[1] * S3[2]
    else:
        c_out, cig = w.shape[0], w.shape[1]
        cog = c_out // groups
        OD, OH, OW = ((i + 2 * P3[a] - L3[a] * (K3[a] - 1) - 1) // S3[a] + 1 for a, i in enumerate((D, H, W)))
        wview, wperm, wbound = (c_out, cig, kt), (2, 0, 1), ((c_out, cig * kt), 1)
        M = n_ * OD * OH * OW
        grid_g = groups
    lead = len(x.shape) - dims
    out = torch.empty((*x.shape[:lead - 1], c_out, *(OD, OH, OW)[3 - dims:]), device="meta")
    cigp, xk, ops_fn, prep, pkw = parts(x, (n_, groups, cig, D * H * W), (kt, c_out, cig), wbound)
    eargs, split = _cp_chain(epis, out.shape, dims)
    sx = _cp_strides(x, x.shape, dims)
    kw = dict(KD=K3[0], KH=K3[1], KW=K3[2], SD=S3[0], SH=S3[1], SW=S3[2], PD=P3[0], PH=P3[1], PW=P3[2],
              DD=L3[0], DH=L3[1], DW=L3[2], HAS_BIAS=not no_bias, SPLIT=split, I64=_i64(out, xk, *epis),
              DIL1=L3 == (1, 1, 1), **pkw)
    grid = lambda meta: (_cdiv(M, meta['BLOCK_M']) * _cdiv(cog, meta['BLOCK_N']), grid_g)
    sargs = (*eargs[len(epis):], M, n_, c_in, c_out, cig, cigp, cog, D, H, W, OD, OH, OW, *sx[:5])
    return out.shape, out.numel() > 0, wview, wperm, ops_fn, prep, sargs, kw, grid, []


def _cv_one_pass(x, xview, wshape, wbound):
    """The `parts` planner of one-pass TF32 (the `tf32` policy): no preparation; (C_in per group
    padded (not), the tensor the kernel indexes x by, the operand function, its plan, constexprs)."""
    return wshape[2], x, _cv_one_ops, None, {}


def _cv_one_ops(x, w, wt, prep):
    """The kernel's six operand parts (x, xlo, xsc, wt, wtl, wsc) of one-pass TF32: x and the
    permuted weight wt, as they are."""
    return x, x, x, wt, wt, wt
