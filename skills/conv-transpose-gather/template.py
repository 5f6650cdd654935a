"""Transposed convolution (1D-3D, any stride, padding, output_padding, dilation, groups) as an
output-centric implicit GEMM by sub-pixel phase, with tf32x3 tensor-core dots and the bias +
pointwise chain fused before the store.

Outputs are grouped by phase (o % stride per dim); within a phase every output needs the same
taps, so each tile visits only the taps that contribute (1/stride^d of them with dilation 1):
no zero-inserted input, no scatter, no atomics, and the upsampled output is written once, with
its epilogue applied. The kernel is in authors/builtin/families/conv_pool/gemm.py.

Not a default until measured on the H200, though this is the category with the most headroom
(eager 6-15x over the floor on transposed 3D convs).
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import ConvGemmTemplate, Region, conv_ok


class ConvTransposeGather(ConvGemmTemplate):
    kinds = ("conv_transpose",)

    def match(self, region: Region) -> bool:
        return conv_ok(region, fp32_only=True) and region.anchor.kind == "conv_transpose"


TEMPLATE = ConvTransposeGather()
