"""Direct depthwise convolution (1D-3D, groups = in_channels, any channel multiplier) in fp32
FMAs, with the bias and the pointwise chain after it fused before the store, and a cheap
pointwise chain before it (relu, clamp, scale...) applied on the loads.

A depthwise conv does k^d FMAs per output: memory-bound, yet cuDNN runs it ~5x over the floor.
One program per (plane = (n, c_out), BLOCK_R output rows x BLOCK_W output columns); every tap
is unrolled, its shifted input tile loaded with border masks (zero padding) and its weight a
scalar load; shifted tiles overlap, so repeated reads hit L1 and DRAM sees the input once. The
kernel loops over the input channels of the group, so it stays correct for any grouping (at
full size too), but it is only fast when each group has one input channel.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    CHEAP_OPS,
    COLLAPSE,
    CP_PLANS,
    CP_RUNTIME,
    POOL_WINDOW,
    WINDOW_CONSTS,
    DirectConvLaunch,
    EmitContext,
    Emitted,
    PlaneChain,
    Region,
    Template,
    autotune,
    chain_ok,
    conv_bias_expr,
    hashable_attr,
    indent,
    is_float,
    module_expr,
    single_output,
    tup,
    window_tile_lines,
)

# Rationale: like pooling, ~1-2K outputs per program with wide rows for coalesced shifted loads;
# taps re-read the tile from L1, and the halo re-read from L2 shrinks with taller tiles (5x5
# taps on a 32x64 tile: 1.2x the input, on 8x64: 1.6x). BLOCK_R = 1 serves 1-D convs. The first
# entry is the interpreter's only one.
CONFIGS = [({"BLOCK_R": 16, "BLOCK_W": 64}, 8, 2), ({"BLOCK_R": 8, "BLOCK_W": 64}, 4, 2),
           ({"BLOCK_R": 4, "BLOCK_W": 128}, 4, 2), ({"BLOCK_R": 32, "BLOCK_W": 64}, 8, 2),
           ({"BLOCK_R": 32, "BLOCK_W": 32}, 8, 2), ({"BLOCK_R": 1, "BLOCK_W": 512}, 4, 2)]


class DepthwiseConvDirect(Template):
    kinds = ("conv",)
    supports_prologue = True
    supports_epilogue = True
    priority = 10
    params = {"configs": [CONFIGS]}

    def match(self, region: Region) -> bool:
        op = region.anchor
        if op is None or op.kind != "conv" or op.out.meta is None or len(op.inputs) < 2:
            return False
        dims, x, w = op.attrs.get("dims"), op.inputs[0], op.inputs[1]
        if dims not in (1, 2, 3) or not is_float(x) or x.meta.rank not in (dims + 1, dims + 2):
            return False
        if not w.is_tensor or w.meta.rank != dims + 2 or w.meta.shape[1] != 1:
            return False  # one input channel per group: depthwise (or a single-channel input)
        if isinstance(op.attrs.get("padding"), str) or len(tup(op.attrs.get("stride", 1), dims)) != dims:
            return False
        # A prologue is re-applied on every tap: only cheap ops.
        if any(o.kind not in CHEAP_OPS for o in region.prologue):
            return False
        return chain_ok(region.prologue) and chain_ok(region.epilogue)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("conv_pool", CP_RUNTIME)
        ctx.share("cp_plans", CP_PLANS)
        ctx.share("pool", POOL_WINDOW)
        op = region.anchor
        dims = op.attrs["dims"]
        out = single_output(region)
        pro = PlaneChain(region.prologue, None, "p") if region.prologue else None
        epi = PlaneChain(region.epilogue, op.out, "e") if region.epilogue else None
        kname, lname = ctx.name("dwconv_kernel"), ctx.name("dwconv")

        src_params = pro.kernel_params() if pro else ["x", "sxn", "sxc", "sxd", "sxh", "sxw"]
        sig = ["out", *src_params, "wgt", "bias", *(epi.kernel_params() if epi else []),
               "C_OUT", "COG", "D", "H", "W", "OD", "OH", "OW", "R"]
        # CIG (input channels per group) is a constexpr: 1 for depthwise, so the loop disappears.
        const = [*WINDOW_CONSTS, "CIG", "HAS_BIAS", "I64", "BLOCK_R", "BLOCK_W"]
        tap = []
        if pro:
            lines, res = pro.kernel_body({"n": "n", "c": "cin", "d": "di", "h": "hi", "w": "wi"}, "m")
            tap += lines + [f"v = tl.where(m, {res}, 0.0)"]
        else:
            tap.append("v = tl.load(xh + wi * sxw, mask=m, other=0.0).to(tl.float32)")
        tap.append("acc += v * tl.load(wb + (kd * KH + kh) * KW + kw).to(tl.float32)")
        body = [*window_tile_lines("C_OUT"),
                "acc = tl.zeros([BLOCK_R, BLOCK_W], tl.float32)",
                "for ci in range(CIG):",
                "    cin = (c // COG) * CIG + ci",
                "    wb = wgt + (c * CIG + ci) * (KD * KH * KW)",
                "    for kd in tl.static_range(KD):",
                "        di = d0 + kd * DD",
                "        md = omask & (di >= 0) & (di < D)",
                *(["        xd = x + n * sxn + cin * sxc + di * sxd"] if not pro else []),
                "        for kh in tl.static_range(KH):",
                "            hi = h0 + kh * DH",
                "            mh = md & (hi >= 0) & (hi < H)",
                *(["            xh = xd + hi * sxh"] if not pro else []),
                "            for kw in tl.static_range(KW):",
                "                wi = w0 + kw * DW",
                "                m = mh & (wi >= 0) & (wi < W)",
                *indent(tap, 16),
                "if HAS_BIAS:",
                "    acc += tl.load(bias + c).to(tl.float32)"]
        res = "acc"
        if epi:
            lines, res = epi.kernel_body({"n": "n", "c": "c", "d": "od[:, None]", "h": "oh[:, None]",
                                          "w": "ow[None, :]"}, "omask", acc="acc")
            body += lines
        body.append(f"tl.store(out + plane * R * OW + r[:, None] * OW + ow[None, :], {res}, mask=omask)")
        configs = ctx.params.get("configs", CONFIGS)
        kernel = (autotune(configs, ["R", "OW", "W", "CIG"])
                  + f"def {kname}({', '.join(sig + [f'{c}: tl.constexpr' for c in const])}):\n"
                  + "\n".join(indent(body, 4)))

        src_vals = pro.ext if pro else [op.inputs[0]]
        epi_vals = epi.ext if epi else []
        # The plan (output shape, strides, sizes, constexprs, grid) depends on the layer's
        # attributes and the operands' metadata only: runtime _dw_run computes it once per key.
        launch = DirectConvLaunch(name=lname, plans=f"{lname}_plans", kernel=kname, n_src=len(src_vals),
                                  n_epi=len(epi_vals), dtype=str(out.meta.dtype), dims=dims,
                                  pro=pro is not None)
        mod = module_expr(op)
        a = op.attrs
        names = ("stride", "padding", "dilation", "groups")
        # The attributes key the launcher's plan cache: a list-valued one is passed as a tuple.
        bias = conv_bias_expr(op)
        if mod is not None:
            attrs = [f"{mod}.weight", bias, *(hashable_attr(f"{mod}.{k}", a.get(k)) for k in names)]
        else:
            attrs = [op.inputs[1].name, bias, *(hashable_attr(repr(a[k]), a[k]) for k in names)]
        args = [v.name for v in src_vals] + attrs + [v.name for v in epi_vals]
        return Emitted(kernels=[kernel], helpers=[launch.render()],
                       lines=[f"{out.name} = {lname}({', '.join(args)})"])


TEMPLATE = DepthwiseConvDirect()
