"""Global average pooling (adaptive_avg_pool to output size 1) as a row reduction over the
flattened spatial dims, with the pointwise chain before it applied on the loads and the chain
after it applied to the pooled values.

Each program reduces BLOCK_P planes (n, c) over L = D*H*W elements in BLOCK_L chunks, with fp32
partial sums per lane and one tree reduction at the end. NCHW rows are contiguous (coalesced
along L); channels-last inputs collapse to a row stride of C and are coalesced along the planes
of a block instead. The input is read once: the floor.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    COLLAPSE,
    CP_PLANS,
    CP_RUNTIME,
    POOL_GLOBAL,
    EmitContext,
    Emitted,
    Op,
    PlaneChain,
    PlaneLaunch,
    Region,
    Template,
    autotune,
    chain_ok,
    indent,
    is_float,
    single_output,
)

# Rationale: long rows (L >= 1024, e.g. 64x64 maps) want one or a few planes per program and
# wide chunks; short rows (7x7 = 49 in CNN heads) want many planes per program so a program
# still streams ~4K elements. The first entry (the interpreter's only one) is a middle ground.
CONFIGS = [({"BLOCK_P": 16, "BLOCK_L": 128}, 4, 2), ({"BLOCK_P": 1, "BLOCK_L": 2048}, 8, 2),
           ({"BLOCK_P": 4, "BLOCK_L": 1024}, 8, 2), ({"BLOCK_P": 8, "BLOCK_L": 256}, 4, 2),
           ({"BLOCK_P": 64, "BLOCK_L": 64}, 8, 2), ({"BLOCK_P": 128, "BLOCK_L": 16}, 4, 2)]


def _global_dims(op: Op) -> int | None:
    """Number of trailing dims a global adaptive average pool averages away (output size 1 on
    every pooled dim), or None when it is not a global pool."""
    size, dims = op.attrs.get("output_size"), op.attrs.get("dims")
    sizes = list(size) if isinstance(size, (tuple, list)) else [size]
    if dims not in (1, 2, 3) or any(s != 1 for s in sizes):
        return None
    return dims


class GlobalPoolRowReduction(Template):
    kinds = ("adaptive_avg_pool",)
    supports_prologue = True
    supports_epilogue = True
    priority = 5
    params = {"configs": [CONFIGS]}

    def match(self, region: Region) -> bool:
        op = region.anchor
        if op is None or op.kind not in self.kinds or op.out.meta is None or not is_float(op.inputs[0]):
            return False
        dims = _global_dims(op)
        if dims is None or op.inputs[0].meta.rank not in (dims + 1, dims + 2):
            return False
        return chain_ok(region.prologue) and chain_ok(region.epilogue)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("conv_pool", CP_RUNTIME)
        ctx.share("cp_plans", CP_PLANS)
        ctx.share("gpool", POOL_GLOBAL)
        op = region.anchor
        dims = _global_dims(op)
        out = single_output(region)
        pro = PlaneChain(region.prologue, None, "p") if region.prologue else None
        epi = PlaneChain(region.epilogue, op.out, "e") if region.epilogue else None
        kname, lname = ctx.name("gpool_kernel"), ctx.name("gpool")

        src_params = pro.kernel_params() if pro else ["x", "sxn", "sxc", "sxd", "sxh", "sxw", "sxj"]
        sig = ["out", *src_params, *(epi.kernel_params() if epi else []), "P", "C", "L", "H", "W"]
        const = ["SPLIT", "I64", "BLOCK_P", "BLOCK_L"]
        body = ["pid = tl.program_id(0)",
                "planes = pid * BLOCK_P + tl.arange(0, BLOCK_P)",
                "if I64:",
                "    planes = planes.to(tl.int64)",
                "pmask = planes < P",
                "n1 = planes // C",
                "c1 = planes % C",
                "n = n1[:, None]",
                "c = c1[:, None]",
                "acc = tl.zeros([BLOCK_P, BLOCK_L], tl.float32)",
                "for j0 in range(0, L, BLOCK_L):",
                "    j = j0 + tl.arange(0, BLOCK_L)[None, :]",
                "    m = pmask[:, None] & (j < L)",
                "    if SPLIT:",
                "        d = j // (H * W)",
                "        h = (j // W) % H",
                "        w = j % W",
                "    else:",
                "        d = j",
                "        h = j",
                "        w = j"]
        if pro:
            lines, res = pro.kernel_body({"n": "n", "c": "c", "d": "d", "h": "h", "w": "w", "j": "j"}, "m",
                                         split="SPLIT")
            body += indent(lines, 4) + [f"    acc += tl.where(m, {res}, 0.0)"]
        else:
            body += ["    if SPLIT:",
                     "        xo = d * sxd + h * sxh + w * sxw",
                     "    else:",
                     "        xo = j * sxj",
                     "    acc += tl.load(x + n * sxn + c * sxc + xo, mask=m, other=0.0).to(tl.float32)"]
        body.append("res = tl.sum(acc, axis=1) / L")
        res = "res"
        if epi:
            lines, res = epi.kernel_body({"n": "n1", "c": "c1"}, "pmask", acc="res")
            body += lines
        body.append(f"tl.store(out + planes, {res}, mask=pmask)")
        configs = ctx.params.get("configs", CONFIGS)
        kernel = (autotune(configs, ["P", "L"])
                  + f"def {kname}({', '.join(sig + [f'{c}: tl.constexpr' for c in const])}):\n"
                  + "\n".join(indent(body, 4)))

        src_vals = pro.ext if pro else [op.inputs[0]]
        epi_vals = epi.ext if epi else []
        # The launch plan depends on the operands' metadata only: computed once per signature
        # (_gpool_plan), so a call costs the lookup, the output allocation and the launch.
        launch = PlaneLaunch(name=lname, plans=ctx.name("plans"), kernel=kname, planner="_gpool_plan",
                             n_src=len(src_vals), n_epi=len(epi_vals), dtype=str(out.meta.dtype),
                             consts=(dims,))
        args = [v.name for v in src_vals] + [v.name for v in epi_vals]
        return Emitted(kernels=[kernel], helpers=[launch.render()],
                       lines=[f"{out.name} = {lname}({', '.join(args)})"])


TEMPLATE = GlobalPoolRowReduction()
