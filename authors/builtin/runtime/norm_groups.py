"""Group and instance norm's launch planner (`_nrm_groups_plan`, named by families/norms/emit.py):
which path runs and with which tiles, from x's layout.

Pasted into a solution with a group or instance norm (runtime.NORM_GROUPS), after
runtime/norms.py, whose helpers it calls.
"""

from .common import _cdiv, _npow2
from .norms import _NRM_ROW_MAX, _nrm_apply_plan, _nrm_channels_last, _nrm_nchw, _nrm_stats_prep


def _nrm_groups_plan(x, shape, i64, p_kw, named, groups, eps, keep_nhwc=False, stats=None):
    """group_norm (`groups` groups of channels) / instance_norm (groups None: one per channel):
    rows in registers (path 0) or two-level statistics (1) on contiguous x; on a 4-D / 5-D x laid
    out channels-last (a convolution's output kept NHWC for it), two-level statistics read in
    place and the channels-last apply writing the NCHW result (4): no copy of x first; with
    `keep_nhwc` (only convolutions read the result, each would convert it) channels-last too.
    Role "xb" (a group norm's): the per-channel bias of the convolution before, which x lacks
    (families/norms/absorb.py): the channels-last path adds it as it loads x, the others first.
    `stats`: the statistics plan's tile / programs (_nrm_stats_prep), None for the defaults."""
    N, C, HW = _nrm_nchw(shape)
    G = C if groups is None else groups
    cpg = C // G
    rows, R = N * G, cpg * HW
    args = (N * C, HW, HW, rows, C, cpg, eps)
    xb = "xb" in named
    if _nrm_channels_last(x):
        # Group (n, g) is cpg consecutive channels at each of the HW pixels (C apart), images
        # HW * C apart; one channel per group (instance norm) is one strided run of pixels.
        if cpg == 1:
            sp = _nrm_stats_prep(1, rows, HW, 0, 1, C, 0, eps, i64, p_kw, gi=C, sgo=HW * C, xb_values=xb,
                                 stats=stats)
        else:
            sp = _nrm_stats_prep(HW, rows, cpg, C, cpg, 1, 0, eps, i64, p_kw, gi=G, sgo=HW * C, xb_values=xb,
                                 stats=stats)
        br, bl = _nrm_apply_plan(C, HW, cl=True)
        kw = dict(SIDX=0, AFF=1, FROM_RUNNING=False, OUT_CL=bool(keep_nhwc), HAS_XB=xb, IN_CL=True,
                  BLOCK_R=br, BLOCK_L=bl)
        return x, 4, args, kw, (N * _cdiv(C, br) * _cdiv(HW, bl),), sp
    x = x.contiguous()  # conv outputs are already; anything else pays one copy for coalesced passes
    if xb:  # a new x: the launcher then plans each call on its own operands
        x = x + named["xb"].reshape(C, *[1] * (len(shape) - 2))
    if R <= _NRM_ROW_MAX:
        grid = lambda meta: (_cdiv(rows, meta['ROWS']),)
        return x, 0, (rows, R, R, eps, G, cpg, HW), dict(MODE=0, AFF=1, BLOCK=_npow2(R)), grid, None
    sp = _nrm_stats_prep(1, rows, R, 0, R, 1, 0, eps, i64, p_kw, stats=stats)
    br, bl = _nrm_apply_plan(N * C, HW)
    kw = dict(SIDX=0, AFF=1, FROM_RUNNING=False, BLOCK_R=br, BLOCK_L=bl)
    return x, 1, args, kw, (_cdiv(N * C, br) * _cdiv(HW, bl),), sp
