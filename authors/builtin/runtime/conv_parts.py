"""The implicit-GEMM convolutions' prepared operand parts under strict fp32 (the `parts` planners of
runtime/conv_gemm.py's _cv_gemm_run, see families/conv_pool/gemm.py): fp16 hi / lo parts of both
operands (`_cv_f16_parts`), or the weight's TF32 hi / lo parts (`_cv_tf32_parts`). Each planner
returns (C_in per group padded, the tensor the kernel indexes x by, the operand function, its plan,
extra constexprs), computed on meta operands; the operand function runs per call.

Pasted into a solution with such a launcher (runtime.CONV_PARTS), after runtime/common.py and
gemm_prep.py, whose helpers it calls.
"""

import math

import torch

from .common import _npow2
from .gemm_prep import _gemm_prep_plan, _gemm_prep_run


def _cv_f16_parts(x, xview, wshape, wbound):
    """fp16 hi / lo parts (see gemm.py's _a_step): the input channels last as [N * groups, pixels,
    C_in per group padded to the K tile ck], scaled per (image, group); the permuted weight
    `wshape` (taps, C_out, C_in per group) scaled per output channel (bounds over `wbound`: the
    weight's view and dims holding one output channel)."""
    ck = min(64, max(16, _npow2(xview[2])))
    xg = x.reshape(xview)
    xp, xplan = _gemm_prep_plan(xg, xview[0] * xview[1], xview[1], xg.stride(0), xg.stride(1), False, 3, ck,
                                1, 0)
    wt = torch.empty(wshape, device="meta")
    cigp, wplan = _gemm_prep_plan(wt, wshape[0], 1, wshape[1] * wshape[2], 0, True, 3, ck, 0, 1)
    xh = torch.empty(xplan[0], device="meta", dtype=torch.float16)
    return cigp, xh, _cv_f16_ops, (xview, xplan, *wbound, wshape, wplan), {"BLOCK_K": ck}


def _cv_f16_ops(x, w, wt, prep):
    """The kernel's six operand parts (xh, xl, x scales, wh, wl, w scales) of _cv_f16_parts' plan:
    each operand's bound (max |x| per (image, group), per output channel), then its parts."""
    xview, xplan, wbview, wbdims, wshape, wplan = prep
    xg = x.reshape(xview)
    xsc = torch.linalg.vector_norm(xg, math.inf, dim=(2, 3)).reshape(-1)
    wsc = torch.linalg.vector_norm(w.reshape(wbview), math.inf, dim=wbdims).reshape(-1)
    xh, xl, _ = _gemm_prep_run(xg, xplan, xsc)
    wh, wl, _ = _gemm_prep_run(wt.reshape(wshape), wplan, wsc)
    return xh, xl, xsc, wh, wl, wsc


def _cv_tf32_parts(x, xview, wshape, wbound):
    """The weight's TF32 hi / lo parts, rows of C_in per group padded (see gemm.py's _a_step); the
    activation stays as it is and is split in registers."""
    view = (wshape[0] * wshape[1], wshape[2])
    cigp, plan = _gemm_prep_plan(torch.empty(view, device="meta"), 1, 1, 0, 0, True, 1)
    return cigp, x, _cv_tf32_ops, (view, plan), {}


def _cv_tf32_ops(x, w, wt, prep):
    """The kernel's six operand parts (x, x, x, wh, wl, wh) of _cv_tf32_parts' plan."""
    view, plan = prep
    wh, wl, _ = _gemm_prep_run(wt.reshape(view), plan)
    return x, x, x, wh, wl, wh
