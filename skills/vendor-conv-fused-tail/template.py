"""The vendor convolution (cuDNN: F.conv1d/2d/3d, F.conv_transpose1d/2d/3d) called WITHOUT its
bias, then the bias and the whole pointwise chain after the conv in one Triton pass over the
conv's output.

PyTorch adds a conv bias in a separate pass over the output and every following pointwise op
is one more read and write of it; here the conv output is read once and the result written once
whatever the chain's length. The pass is a 2-D tile of (BLOCK_P planes (n, c)) x (BLOCK_L
spatial elements): the bias and any per-channel operand are a gather of BLOCK_P values, with no
integer division per element; small maps (7x7) still fill a program with several planes. The
output is a fresh tensor rather than the conv's buffer: same traffic, and the autotuner may
re-run the kernel while tuning.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    COLLAPSE,
    CONV_TAIL,
    CP_RUNTIME,
    PIXEL_COORDS,
    ConvLaunch,
    EmitContext,
    Emitted,
    PlaneChain,
    Region,
    Template,
    autotune,
    conv_attr_args,
    conv_ok,
    indent,
    single_output,
    tail_runs,
)

# Rationale: a memory-bound pass wants ~2-4K elements per program with 16-byte accesses along
# the contiguous spatial run; long maps use one plane per program, short ones (7x7, 14x14) take
# several planes per program so lanes are not wasted. The first entry is the interpreter's.
CONFIGS = [({"BLOCK_P": 8, "BLOCK_L": 256}, 8, 2), ({"BLOCK_P": 1, "BLOCK_L": 2048}, 8, 2),
           ({"BLOCK_P": 2, "BLOCK_L": 1024}, 4, 2), ({"BLOCK_P": 16, "BLOCK_L": 64}, 4, 2),
           ({"BLOCK_P": 64, "BLOCK_L": 16}, 4, 2)]


class ConvVendorEpilogue(Template):
    kinds = ("conv", "conv_transpose")
    supports_epilogue = True
    priority = 0
    params = {"configs": [CONFIGS]}

    def match(self, region: Region) -> bool:
        return conv_ok(region)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("conv_pool", CP_RUNTIME)
        ctx.share("conv_tail", CONV_TAIL)
        op = region.anchor
        dims, transposed = op.attrs["dims"], op.kind == "conv_transpose"
        out = single_output(region)
        epi = PlaneChain(region.epilogue, op.out, "e") if region.epilogue else None
        kname, lname = ctx.name("conv_epilogue_kernel"), ctx.name("vendor_conv")

        sig = ["out", "y", "bias", *(epi.kernel_params() if epi else []), "P", "C", "L", "H", "W"]
        const = ["HAS_BIAS", "SPLIT", "I64", "BLOCK_P", "BLOCK_L"]
        body = ["pid = tl.program_id(0)",
                "tiles_l = tl.cdiv(L, BLOCK_L)",
                "planes = (pid // tiles_l) * BLOCK_P + tl.arange(0, BLOCK_P)",
                "j = (pid % tiles_l) * BLOCK_L + tl.arange(0, BLOCK_L)",
                "if I64:",
                "    planes = planes.to(tl.int64)",
                "    j = j.to(tl.int64)",
                "pmask = planes < P",
                "m = pmask[:, None] & (j < L)[None, :]",
                "c = (planes % C)[:, None]",
                "n = (planes // C)[:, None]",
                "jj = j[None, :]",
                "offs = planes[:, None] * L + jj",
                "acc = tl.load(y + offs, mask=m, other=0.0).to(tl.float32)",
                "if HAS_BIAS:",
                "    acc += tl.load(bias + c, mask=pmask[:, None], other=0.0).to(tl.float32)"]
        res = "acc"
        if epi:
            body += PIXEL_COORDS
            lines, res = epi.kernel_body({"n": "n", "c": "c", "d": "d", "h": "h", "w": "w", "j": "jj"}, "m",
                                         acc="acc", split="SPLIT")
            body += lines
        body.append(f"tl.store(out + offs, {res}, mask=m)")
        configs = ctx.params.get("configs", CONFIGS)
        kernel = (autotune(configs, ["P", "L"])
                  + f"def {kname}({', '.join(sig + [f'{c}: tl.constexpr' for c in const])}):\n"
                  + "\n".join(indent(body, 4)))

        epi_vals = epi.ext if epi else []
        # The vendor call runs per call; the tail's plan (stride arguments, sizes, constexprs,
        # grid) depends on the conv output's and the operands' metadata only: runtime
        # _cv_tail_run computes it once per key.
        args = conv_attr_args(region) + [v.name for v in epi_vals]
        tail = tail_runs(args, epi)
        launch = ConvLaunch(name=lname, plans=f"{lname}_plans", run="_cv_tail_run",
                            kernel=kname if tail else "None",
                            how=f"F.conv_transpose{dims}d" if transposed else f"F.conv{dims}d",
                            transposed=transposed, n_epi=len(epi_vals), dtype=str(out.meta.dtype),
                            consts=(dims,))
        return Emitted(kernels=[kernel] if tail else [], helpers=[launch.render()],
                       lines=[f"{out.name} = {lname}({', '.join(args)})"])


TEMPLATE = ConvVendorEpilogue()
