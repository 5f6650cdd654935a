"""Split-K GEMM: when the output has fewer tiles than about two waves of SMs and K is long, the
launcher splits K into chunks, one program per (chunk, tile) writes an fp32 partial product, and
a second, memory-bound kernel sums the partials in a fixed order (deterministic), adds the bias
and applies the fused epilogue. Otherwise it runs the plain fused GEMM.

The choice is made from the run-time sizes (the SMALL capture says nothing about full sizes), so
it is safe on any GEMM, and the default GEMM templates make it too (`GemmTemplate.split_k`): it
only triggers on few-tile, long-K shapes (e.g. 640 x 896 with K = 50000: 35 tiles of 128x128 for
132 SMs -> 7 chunks). This template pins the choice for the planner; on a default candidate it
changes nothing, so the planner skips it there."""

from kernelskill.authors.builtin.templates.api import GemmTemplate


class GemmSplitK(GemmTemplate):
    default = False
    split_k = True


TEMPLATE = GemmSplitK()
