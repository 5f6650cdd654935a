"""The Triton GEMM with fp32-accurate tensor-core dots, whatever the precision policy: tf32x3
(three TF32 products recover fp32 accuracy; on large shapes the operands are prepared as TF32
hi / lo parts first, runtime/gemm_prep.py: 1.7-2.1x cuBLAS fp32 on an H200) or, with the planner's
`input_precision: ieee`, exact fp32 FMA dots.

Default on, below gemm-epilogue-fusion (same kernel, epilogue included): it takes the GEMMs when
that template is turned off, and as an applied skill it pins strict precision.
"""

from kernelskill.authors.builtin.templates.api import GemmTemplate


class GemmTf32x3(GemmTemplate):
    default = True
    priority = 10
    tf32 = False


TEMPLATE = GemmTf32x3()
