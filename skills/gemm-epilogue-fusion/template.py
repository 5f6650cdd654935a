"""Default GEMM template: a Triton GEMM (linear / matmul / bmm) with the region's pointwise tail
(bias, activations, scaling, clamps, residual adds) applied to the fp32 accumulator tile before
its only store.

Why: the tail after a GEMM reads and writes the full output once per op in eager PyTorch, and
torch.compile does not fuse it into cuBLAS; here it costs no memory traffic at all. The dot uses
tf32x3 under strict fp32 (prepared TF32 hi / lo operands on large shapes: 1.7-2.1x cuBLAS fp32 on
an H200, runtime/gemm_prep.py).
"""

from kernelskill.authors.builtin.templates.api import GemmTemplate


class GemmEpilogueFusion(GemmTemplate):
    default = True
    # Above gemm-tf32x3-strict-fp32 (the same kernel): a plain GEMM region must pick this template
    # too, or fuse.py could not attach the following pointwise chain to it as an epilogue.
    priority = 20
    params = {}  # no variants: its tiles and precision are the defaults the other skills move from


TEMPLATE = GemmEpilogueFusion()
