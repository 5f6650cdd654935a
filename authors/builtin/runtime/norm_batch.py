"""Batch norm's launch planner (`_nrm_batch_plan`, named by families/norms/emit.py): which path
runs and with which tiles, from x's layout and the module's mode.

Pasted into a solution with a batch norm (runtime.NORM_BATCH), after runtime/norms.py, whose
helpers it calls.
"""

from .common import _cdiv
from .norms import _nrm_apply_plan, _nrm_channels_last, _nrm_nchw, _nrm_stats_prep


def _nrm_batch_plan(x, shape, i64, p_kw, named, eps, training, momentum, keep_nhwc=False, stats=None):
    """batch_norm: two-level statistics then apply in training (path 1), updating the running
    statistics present in `named` (role -> operand); one elementwise pass with the running
    statistics in eval (3).
    A 4-D / 5-D x laid out channels-last is read in place (paths 4 and 5, the same with the
    channels-last apply kernel): statistics over (image, pixel) per channel with the channels
    contiguous, the apply transposing into the NCHW output, or keeping channels-last when
    `keep_nhwc` (the emitter found only convolutions reading the result: each would convert it).
    Under `keep_nhwc` an NCHW x takes paths 4 and 5 too, the apply reading it in NCHW (IN_CL off)
    and writing channels-last (no prologue: its operands are read at NCHW offsets).
    Role "xb": the bias of the convolution before, which x lacks (families/norms/absorb.py): the
    normalized result does not depend on it, the running mean does. `stats`: the statistics
    plan's tile / programs (_nrm_stats_prep), None for the defaults."""
    N, C, HW = _nrm_nchw(shape)
    cl = _nrm_channels_last(x)
    # An NCHW x whose result only convolutions read: the channels-last apply reads it in NCHW and
    # writes channels-last (IN_CL off), the transposition riding on the pass, instead of each
    # convolution converting an NCHW result (a DenseNet layer's norm of the concatenation).
    to_cl = keep_nhwc and not cl and not p_kw and len(shape) in (4, 5) and C > 1 and HW > 1
    if cl or to_cl:  # the apply's tiles: channels x pixels of one image
        x = x if cl else x.contiguous()
        br, bl = _nrm_apply_plan(C, HW, cl=True)
        grid = (N * _cdiv(C, br) * _cdiv(HW, bl),)
    else:
        x = x.contiguous()
        br, bl = _nrm_apply_plan(N * C, HW)
        grid = (_cdiv(N * C, br) * _cdiv(HW, bl),)
    args = (N * C, HW, HW, C, C, 1, eps)
    kw = dict(SIDX=1, AFF=1, FROM_RUNNING=not training, BLOCK_R=br, BLOCK_L=bl)
    if cl or to_cl:
        # x's bias, if absorbed, cancels here
        kw.update(OUT_CL=bool(keep_nhwc), HAS_XB=False, IN_CL=cl)
    if not training:
        return x, 5 if cl or to_cl else 3, args, kw, grid, None
    running = "rm" in named and "rv" in named
    sc, sb = (1, C) if cl else (HW, 1)  # strides of a channel and of a pixel
    sp = _nrm_stats_prep(N, C, HW, C * HW, sc, sb, 0, eps, i64, p_kw, running, "nbt" in named, momentum,
                         has_xb=running and "xb" in named, stats=stats)
    return x, 4 if cl or to_cl else 1, args, kw, grid, sp
