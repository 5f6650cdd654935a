"""Matrix-vector products as bandwidth kernels, including rank-1 operands (`A @ x` with x 1-D,
`x @ A`), which the default GEMM templates leave to cuBLAS.

When M or N is at most 8 at run time, a CUDA-core kernel multiplies and adds a
[BLOCK_M, BLOCK_K, BLOCK_N] tile and reduces over K once at the end, reading the large operand
once with 16-byte loads (a tensor-core tile would be >= 16 wide and mostly padding); larger
shapes take the tensor-core GEMM. The default templates make the same run-time choice for
rank-2 operands ([K, 1] columns, linear layers on a few rows); this skill adds the rank-1 forms."""

from kernelskill.authors.builtin.templates.api import GemmTemplate


class GemvBandwidth(GemmTemplate):
    default = False
    rank1 = True
    params = {}  # no variants: the tensor-core path's precision knobs are gemm-tf32x3-strict-fp32's


TEMPLATE = GemvBandwidth()
