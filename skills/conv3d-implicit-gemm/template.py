"""3D convolution as a Triton implicit GEMM over NCDHW tiles with tf32x3 tensor-core dots and
the bias + pointwise chain fused before the store (the kernel of conv-implicit-gemm with a
depth dimension: M = N * OD * OH * OW, K = 27 taps x C_in for a 3x3x3 kernel).

Not a default until measured: vendor 3D kernels are less tuned than 2D ones (eager is ~7x
over the floor on 3D chains), which is where this should win most; but under the strict policy
the comparison is cuDNN fp32 vs tf32x3, and the eager baseline runs one-pass TF32.
"""

from __future__ import annotations

from kernelskill.authors.builtin.conv_pool_common import conv_ok, one_channel_groups
from kernelskill.authors.builtin.conv_pool_gemm import GEMM_CONFIGS, emit_conv_gemm
from kernelskill.authors.builtin.ir import Region
from kernelskill.authors.builtin.template_api import EmitContext, Emitted, Template


class Conv3dImplicitGemm(Template):
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
        return conv_ok(region, fp32_only=True) and op.kind == "conv" and op.attrs["dims"] == 3 \
            and not one_channel_groups(op)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_conv_gemm(region, ctx, GEMM_CONFIGS)


TEMPLATE = Conv3dImplicitGemm()
