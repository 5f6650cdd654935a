"""Combine functions only the cross-entropy losses need: the log-sum-exp state carried together
with one or two running sums (the target's logit, the smoothing term), merged across a tile's
lanes and across a split reduction's partials.

Pasted into a solution with a cross entropy (runtime.LOSSES_RUNTIME), after
runtime/reductions.py, whose `_red_lse` they extend; kept apart so that other reductions do not
carry two kernels they never call.
"""

import triton

from .reductions import _red_lse


@triton.jit
def _red_lse_add(m1, s1, a1, m2, s2, a2):
    m, s = _red_lse(m1, s1, m2, s2)
    return m, s, a1 + a2


@triton.jit
def _red_lse_add2(m1, s1, a1, b1, m2, s2, a2, b2):
    m, s = _red_lse(m1, s1, m2, s2)
    return m, s, a1 + a2, b1 + b2
