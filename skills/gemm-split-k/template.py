"""Split-K GEMM: when the output has fewer tiles than about two waves of SMs and K is long, the
launcher splits K into chunks, one program per (chunk, tile) writes an fp32 partial product, and
a second, memory-bound kernel sums the partials in a fixed order (deterministic), adds the bias
and applies the fused epilogue. Otherwise it runs the plain fused GEMM.

The choice is made from the run-time sizes (the SMALL capture says nothing about full sizes), so
it is safe on any GEMM, and the default GEMM templates make it too (`GemmTemplate.split_k`): it
only triggers on few-tile, long-K shapes (e.g. 640 x 896 with K = 50000: 35 tiles of 128x128 for
132 SMs -> 7 chunks). This template pins the choice for the planner; on a default candidate it
changes nothing, so the planner skips it there. Its variants (`split_k`: 2, 4, 8, 16) pin the
number of K chunks instead, whatever the shape (runtime/gemm.py: chunks of >= 128, a multiple
of every BLOCK_K; a K below 256 stays whole): the rule's count is a guess from the SM count, and
fewer, longer chunks cost less workspace traffic, more cost fewer idle SMs."""

from kernelskill.authors.builtin.templates.api import EmitContext, GemmTemplate

SPLITS = [2, 4, 8, 16]


class GemmSplitK(GemmTemplate):
    default = False
    split_k = True
    params = {"split_k": SPLITS}

    def splits(self, ctx: EmitContext) -> bool | int:
        n = self.own(ctx).get("split_k")
        return n if n in SPLITS else self.split_k


TEMPLATE = GemmSplitK()
