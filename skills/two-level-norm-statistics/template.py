"""Group / instance / batch norm with two-level statistics, fused with pointwise neighbours.

Level 1 splits each group's (or BatchNorm channel's) elements into chunks over ~8 programs per SM
and reduces each chunk with per-lane Welford into (count, mean, M2); level 2 combines the partials
(Chan et al.) into shift and scale, and for BatchNorm in training also updates running_mean /
running_var (momentum, unbiased variance) and num_batches_tracked like the module; one elementwise
pass then normalizes, applies the affine map and the fused epilogue: 2 reads + 1 write of x with
every SM streaming. Groups small enough for registers (GroupNorm after a Linear, instance norm of
small maps) take the one-pass row kernel instead; BatchNorm in eval mode is the single pass with
the running statistics. A 4-D / 5-D batch norm reading a convolution's channels-last output in place
writes NCHW, or keeps channels-last where only convolutions read its result (each would convert it);
so does a group or instance norm. A batch norm in training, an instance norm or a group norm right
after a convolution absorbs the convolution's bias: the first two cancel it (a batch norm's running
mean still gets it), a group norm adds it to each value it loads.

Variants (ctx.params) reshape the statistics pass: `stats_tile`, the elements one program reduces
per step (its three Welford arrays hold tile / threads values each: a smaller tile cuts registers
where they cap occupancy), and `stats_programs`, how many programs stream the data (runtime
_nrm_stats_plan's `tile` and `programs`).
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    EmitContext,
    Emitted,
    Program,
    Region,
    Template,
    absorb_conv_biases,
    chains_supported,
    emit_norm,
    nhwc_readers,
    parse_norm,
)


class TwoLevelNormStatistics(Template):
    # "rewrite" only to see the whole program before partitioning (as channels-last-layout does):
    # which values only channels-last convolutions read.
    kinds = ("group_norm", "batch_norm", "instance_norm", "rewrite")
    supports_prologue = True
    supports_epilogue = True
    priority = 1
    params = {"stats_tile": [1024, 2048, 4096], "stats_programs": [1056, 2112]}
    _nhwc: frozenset[str] = frozenset()

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        # The bias of a convolution right before a norm moves into the norm (absorb_conv_biases).
        absorbed = absorb_conv_biases(program)
        # Convolutions go channels-last only under a policy with TF32 convolutions (see
        # channels-last-layout); under `strict` they stay NCHW and so does every norm's output.
        self._nhwc = frozenset(nhwc_readers(absorbed or program)) if ctx.conv_tf32 else frozenset()
        return absorbed

    def match(self, region: Region) -> bool:
        op = region.anchor
        return (op is not None and op.kind in self.kinds and parse_norm(op) is not None
                and chains_supported(region))

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        stats = {key: ctx.params[p] for p, key in (("stats_tile", "tile"), ("stats_programs", "programs"))
                 if p in ctx.params}
        return emit_norm(region, ctx, parse_norm(region.anchor), keep_nhwc=region.output().name in self._nhwc,
                         stats=stats)


TEMPLATE = TwoLevelNormStatistics()
