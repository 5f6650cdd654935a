"""Whole-tensor reductions to one value (sum, mean, norm, max, scalar losses) in two stages:
a grid of `waves` programs per SM, each reducing a contiguous share of the flattened input to
one fp32 partial, then one program merging the partials in a fixed order (deterministic).

The default templates already do this for full reductions; this variant launches more, larger
programs (8 per SM, 8192-element steps), for the planner to try when the profile shows the
first stage below DRAM peak.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    ELEMENTWISE_LOSSES,
    LossTemplate,
    ReductionTemplate,
    VariantTemplate,
    whole_tensor,
)


class _ScalarLosses(LossTemplate):
    kinds = ELEMENTWISE_LOSSES


TEMPLATE = VariantTemplate([ReductionTemplate(), _ScalarLosses()],
                           overrides={"waves": 8, "kmax": 8192, "tile": 8192},
                           params={"waves": [8, 4, 16], "kmax": [8192, 4096]}, applies=whole_tensor)
