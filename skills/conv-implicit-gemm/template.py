"""Convolution (1D / 2D, any stride, padding, dilation, groups) as a Triton implicit GEMM with
tf32x3 tensor-core dots (fp32-accurate) and the bias + pointwise chain fused before the store.

Not a default: under the strict fp32 policy it competes with cuDNN in fp32 (FFMA-bound, about
50 TFLOP/s on an H200) using 3-pass TF32 on tensor cores, which should win on large channel
counts, but a gathered implicit GEMM also pays index math and masked loads; the eager baseline
itself runs cuDNN in one-pass TF32. Apply it when the profile shows the conv dominates and
measure; the kernel is in authors/builtin/conv_pool_gemm.py.
"""

from __future__ import annotations

from kernelskill.authors.builtin.conv_pool_common import conv_ok, one_channel_groups
from kernelskill.authors.builtin.conv_pool_gemm import GEMM_CONFIGS, emit_conv_gemm
from kernelskill.authors.builtin.ir import Region
from kernelskill.authors.builtin.template_api import EmitContext, Emitted, Template


class ConvImplicitGemm(Template):
    kinds = ("conv",)
    supports_epilogue = True
    default = False
    priority = 20
    params = {"configs": [GEMM_CONFIGS], "parts": ["f16", "tf32"]}
    # Each conv region costs three launches (two operand preparations and an autotuned kernel of
    # ~40 arguments): 0.1-0.5 ms of host time per forward, measured on an H200 under the timing
    # protocol (level2/05, 12, level3/04, 12), which graph replay removes.
    graph_replay = "cuda-graph-replay"

    def match(self, region: Region) -> bool:
        op = region.anchor
        return conv_ok(region, fp32_only=True) and op.kind == "conv" and op.attrs["dims"] in (1, 2) \
            and not one_channel_groups(op)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_conv_gemm(region, ctx, GEMM_CONFIGS)


TEMPLATE = ConvImplicitGemm()
