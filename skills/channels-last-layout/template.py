"""The vendor convolution in the layout that wins under a policy with TF32 convolutions
(`default`, `tf32`), its bias and pointwise tail fused into one Triton pass that reads the
convolution's output through its strides.

Under such a policy cuDNN's TF32 kernels are NHWC: in NCHW the library transposes around the
call. The launcher converts the input (a full read and write per call) and the weight (small) to
channels-last where the rule below says so, calls F.conv*d without bias, and runs one pass over
a (pixels x channels) tile of the output that adds the bias, applies the chain and stores the
result either channels-last (when every reader of the region's output is a convolution that
takes this path too, a stack keeping NHWC between its layers, or a batch norm, which reads NHWC
in place and writes NCHW, or NHWC when only convolutions read it) or in the reference's NCHW layout
(the transposition is free inside a pass that reads and writes every element anyway). An input
that only such convolutions read, two or more of them, is converted once for all (SharedInputs).
Under
`strict` it never matches: vendor-conv-fused-tail keeps the NCHW fp32 call.
The pass is in authors/builtin/families/conv_pool/layout.py.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    CONFIGS,
    EmitContext,
    Emitted,
    Program,
    Region,
    SharedInputs,
    Template,
    channels_last_rule,
    conv_ok,
    emit_layout_conv,
    nhwc_readers,
    shared_conv_inputs,
)


class ConvChannelsLast(Template):
    # "rewrite" only to see the run's policy and the whole program before partitioning: match()
    # has no context (as gemm-tf32-tensor-cores does).
    kinds = ("conv", "conv_transpose", "rewrite")
    supports_epilogue = True
    # Above vendor-conv-fused-tail (0), below depthwise-conv-direct (10) and the implicit GEMMs
    # (20-25, applied by skill).
    priority = 5
    params = {"configs": [CONFIGS], "layout": ["auto", "channels_last", "contiguous"]}
    # Every forward using it replays as a CUDA graph where inputs and outputs are small enough
    # (the wrapper runs larger ones plainly): each region costs 3-5 host launches (layout copies,
    # cuDNN, the tail), exposed under a timing protocol that synchronises before each call.
    graph_replay = "cuda-graph-replay"
    _tf32 = False
    _nhwc: frozenset[str] = frozenset()
    _shared: SharedInputs | None = None

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        self._tf32 = ctx.conv_tf32
        self._nhwc = frozenset(nhwc_readers(program))
        self._shared = shared_conv_inputs(program)
        return None

    def match(self, region: Region) -> bool:
        return self._tf32 and conv_ok(region)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        layout = ctx.params.get("layout", "auto")
        op = region.anchor
        if layout == "auto":
            cl = channels_last_rule(op)
        else:
            cl = layout == "channels_last" and op.attrs["dims"] in (2, 3)
        return emit_layout_conv(region, ctx, channels_last=cl,
                                keep_nhwc=cl and region.output().name in self._nhwc,
                                shared=self._shared if layout == "auto" else None)


TEMPLATE = ConvChannelsLast()
