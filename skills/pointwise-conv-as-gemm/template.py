"""1x1 convolution (any dims, stride, groups) as a GEMM over channels: per image
Y[n] = W @ X[n] with X[n] the [C_in, pixels] view of NCHW, no copies, tf32x3 tensor-core dots
and the bias + pointwise chain fused before the store. It is the implicit-GEMM kernel of
conv-implicit-gemm with one tap (no window gather), tuned for deeper K tiles.

Not a default until measured: cuDNN's fp32 1x1 conv is essentially a cuBLAS fp32 GEMM; tf32x3
measured ~1.1x cuBLAS fp32 on plain GEMMs, plus the saved epilogue passes.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    POINTWISE_CONFIGS,
    ConvGemmTemplate,
    Region,
    conv_ok,
    one_channel_groups,
    tup,
)


class PointwiseConvGemm(ConvGemmTemplate):
    kinds = ("conv",)
    priority = 25
    params = {**ConvGemmTemplate.params, "configs": [POINTWISE_CONFIGS]}

    def match(self, region: Region) -> bool:
        op = region.anchor
        if not conv_ok(region, fp32_only=True) or op.kind != "conv" or one_channel_groups(op):
            return False
        a = region.anchor.attrs
        dims = a["dims"]
        one_tap = tup(a.get("kernel_size", 0), dims) == (1,) * dims
        return one_tap and tup(a.get("padding", 0), dims) == (0,) * dims


TEMPLATE = PointwiseConvGemm()
