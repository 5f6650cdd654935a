"""Convolution (1D / 2D, any stride, padding, dilation, groups) as a Triton implicit GEMM with
tf32x3 tensor-core dots (fp32-accurate) and the bias + pointwise chain fused before the store.

Not a default: under the strict fp32 policy it competes with cuDNN in fp32 (FFMA-bound, about
50 TFLOP/s on an H200) using 3-pass TF32 on tensor cores, which should win on large channel
counts, but a gathered implicit GEMM also pays index math and masked loads; the eager baseline
itself runs cuDNN in one-pass TF32. Apply it when the profile shows the conv dominates and
measure; the kernel is in authors/builtin/families/conv_pool/gemm.py.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import ConvGemmTemplate, Region, conv_ok, one_channel_groups


class ConvImplicitGemm(ConvGemmTemplate):
    kinds = ("conv",)

    def match(self, region: Region) -> bool:
        op = region.anchor
        return conv_ok(region, fp32_only=True) and op.kind == "conv" and op.attrs["dims"] in (1, 2) \
            and not one_channel_groups(op)


TEMPLATE = ConvImplicitGemm()
