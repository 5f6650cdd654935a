"""Default template for elementwise losses reduced to a scalar (mse, l1, smooth_l1, huber,
kl_div with reduction mean / sum / batchmean): one grid-wide pass over both inputs.

Programs accumulate the loss of their chunk of the flattened (broadcast) inputs in fp32 lanes and
write one partial each; a one-program kernel merges the partials in a fixed order and divides,
so the loss is one read of each input and deterministic. (reduction='none' losses are pointwise
ops and fuse into neighbouring kernels as prologues or chains.)
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import ELEMENTWISE_LOSSES, LossTemplate


class ElementwiseLossGrid(LossTemplate):
    kinds = ELEMENTWISE_LOSSES


TEMPLATE = ElementwiseLossGrid()
