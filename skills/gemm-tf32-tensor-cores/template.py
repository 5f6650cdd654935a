"""One-pass TF32 tensor-core GEMM, only under the `tf32` precision policy (then the baselines run
with TF32 too): ~1.6x cuBLAS fp32 on an H200 with relative error ~8e-4. Under `default` and
`strict` (IEEE fp32 matmuls, as eager's) it never matches.
"""

from kernelskill.authors.builtin.templates.api import EmitContext, GemmTemplate, Program, Region


class GemmTf32(GemmTemplate):
    # "rewrite" only to see the run's policy before partitioning: match() has no context.
    kinds = ("linear", "matmul", "bmm", "rewrite")
    default = True
    priority = 30
    tf32 = True
    _allow = False

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        self._allow = ctx.matmul_tf32
        return None

    def match(self, region: Region) -> bool:
        return self._allow and super().match(region)


TEMPLATE = GemmTf32()
