"""(A @ B) @ C and A @ (B @ C) on matrices and vectors become one op whose launcher computes the
cost of both associations from the run-time sizes (m*k*n + m*n*p vs k*n*p + m*k*p multiply-adds)
and takes the other order only when it does less than half the work: (A @ B) @ v with a thin v
drops from O(n^3) to O(n^2). The products run in cuBLAS (they are matrix-vector shaped).

Exact math; the rounding differs like any other summation order. Non-default: it applies only
when the planner asks, and keeps the reference's order whenever that is not much worse."""

from kernelskill.authors.builtin.templates.api import (
    EmitContext,
    Emitted,
    Program,
    Region,
    Template,
    rewrite_reassociation,
)


class MatmulReassociation(Template):
    kinds = ("rewrite", "matmul_chain")
    default = False

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        return program if rewrite_reassociation(program) else None

    def match(self, region: Region) -> bool:
        return region.anchor is not None and region.anchor.kind == "matmul_chain"

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        op = region.anchor
        name = ctx.name("matmul_chain")
        left = op.attrs["assoc"] == "left"
        ref, other = ("torch.matmul(torch.matmul(x, y), z)", "torch.matmul(x, torch.matmul(y, z))")
        if not left:
            ref, other = other, ref
        cost_ref, cost_other = ("left", "right") if left else ("right", "left")
        helper = "\n".join([
            f"def {name}(x, y, z):",
            "    m = x.shape[0] if x.dim() == 2 else 1",
            "    k, n = y.shape",
            "    p = z.shape[1] if z.dim() == 2 else 1",
            "    left = m * k * n + m * n * p  # (x @ y) @ z",
            "    right = k * n * p + m * k * p  # x @ (y @ z)",
            "    # Rationale: the reference's order unless the other does under half the work.",
            f"    if 2 * {cost_other} < {cost_ref}:",
            f"        return {other}",
            f"    return {ref}"])
        args = ", ".join(v.name for v in op.inputs)
        return Emitted(helpers=[helper], lines=[f"{op.out.name} = {name}({args})"])


TEMPLATE = MatmulReassociation()
