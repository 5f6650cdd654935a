"""3D convolution as a Triton implicit GEMM over NCDHW tiles with tf32x3 tensor-core dots and
the bias + pointwise chain fused before the store (the kernel of conv-implicit-gemm with a
depth dimension: M = N * OD * OH * OW, K = 27 taps x C_in for a 3x3x3 kernel).

Not a default until measured: vendor 3D kernels are less tuned than 2D ones (eager is ~7x
over the floor on 3D chains), which is where this should win most; but under the strict policy
the comparison is cuDNN fp32 vs tf32x3, and the eager baseline runs one-pass TF32.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import ConvGemmTemplate, Region, conv_ok, one_channel_groups


class Conv3dImplicitGemm(ConvGemmTemplate):
    kinds = ("conv",)

    def match(self, region: Region) -> bool:
        op = region.anchor
        return conv_ok(region, fp32_only=True) and op.kind == "conv" and op.attrs["dims"] == 3 \
            and not one_channel_groups(op)


TEMPLATE = Conv3dImplicitGemm()
