"""Direct depthwise convolution (1D-3D, groups = in_channels, any channel multiplier) in fp32
FMAs, with the bias and the pointwise chain after it fused before the store, and a cheap
pointwise chain before it (relu, clamp, scale...) applied on the loads.

A depthwise conv does k^d FMAs per output: memory-bound, yet cuDNN runs it ~5x over the floor.
One program per (plane = (n, c_out), BLOCK_R output rows x BLOCK_W output columns); every tap
is unrolled, its shifted input tile loaded with border masks (zero padding) and its weight a
scalar load; shifted tiles overlap, so repeated reads hit L1 and DRAM sees the input once. The
kernel loops over the input channels of the group, so it stays correct for any grouping (at
full size too), but it is only fast when each group has one input channel.

Variants (ctx.params; the default is the first value of each, the code above):
- `index_math: hoisted`: the bounds of a tap's row and column are one unsigned compare each on
  the tile's rows or columns, combined once per tap (no output mask on the loads: an out-of-tile
  lane reads in-plane or nothing, and its store is masked); the input pointer is formed once
  per kernel row, the kw taps being constant offsets from it; 1-D / 2-D kernels skip the row
  division by OH. Per-tap integer and predicate work is what kept the ALU pipe busy
  (ROW_CONFIGS' rationale).
- `tiles: rows_per_thread`: autotuning over ROW_CONFIGS, tiles at least 32 x num_warps wide, so
  that a thread holds columns of all BLOCK_R rows: the per-program index math and the per-row
  bounds are shared by 8-32 outputs a thread instead of 4-8.
- `prologue: materialize`: no fused prologue, so its chain runs once per element in its own
  pointwise kernel (or the producer's epilogue) instead of once per tap here.
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
    Program,
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

# Rationale (`tiles: rows_per_thread`): Triton lays a tile at least 32 x num_warps columns wide out
# with lanes and warps along the columns (level3/05's TTGIR), so a thread holds columns of all
# BLOCK_R rows and shares the row-side index math across its columns. Level3/05's depthwise
# kernel (64x240x104x104, 3x3), compiled offline for sm_90 (Triton 3.6's ptxas, no GPU) at the
# autotuner's H100 pick (8x64 on 4 warps: 64 registers, 128 threads, as profiled), issues 5.4
# warp instructions per output: 0.96 ms at one issue per scheduler and clock, against the
# profile's 1.1 ms (ALU pipe 64%). Issue time meets the DRAM floor (1.33 GB at ~3 TB/s) near
# 2.4. 4x128 on one warp: 2.9; with `index_math: hoisted`, 16x128 on two warps: 1.8. More rows
# a thread cost registers (that one: ~180), hence a set to autotune: 8-32 outputs a thread, 32
# wide for narrow outputs (7-28 columns), one row for 1-D convolutions. The first entry is the
# interpreter's.
ROW_CONFIGS = [({"BLOCK_R": 4, "BLOCK_W": 128}, 1, 2), ({"BLOCK_R": 2, "BLOCK_W": 128}, 1, 2),
               ({"BLOCK_R": 8, "BLOCK_W": 128}, 2, 2), ({"BLOCK_R": 16, "BLOCK_W": 128}, 2, 2),
               ({"BLOCK_R": 8, "BLOCK_W": 32}, 1, 2), ({"BLOCK_R": 1, "BLOCK_W": 512}, 2, 2)]

# Each variant parameter's values; the first is the default (the code without the parameter).
SETTINGS = {"index_math": ("per_tap", "hoisted"), "tiles": ("default", "rows_per_thread"),
            "prologue": ("fused", "materialize")}


def settings(params: dict[str, object]) -> dict[str, str]:
    """The variant settings of `params`, checked (other keys are not this module's to judge): an
    unknown value raises, which costs the region its kernel, not the candidate its build."""
    out = {}
    for key, values in SETTINGS.items():
        value = params.get(key, values[0])
        if value not in values:
            raise ValueError(f"depthwise-conv-direct {key} {value!r} is not one of {list(values)}")
        out[key] = str(value)
    return out


def per_tap(tap: list[str], pro: bool) -> list[str]:
    """The kernel body up to the bias (the default): every tap masks its loads with the output
    tile's mask and its bounds, and forms its addresses, per element."""
    return [*window_tile_lines("C_OUT"),
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


def hoisted_taps(tap: list[str], pro: bool, dims: int) -> list[str]:
    """The kernel body up to the bias of `index_math: hoisted`: bounds on the tile's rows
    ([BLOCK_R, 1]) and columns ([1, BLOCK_W]), each an unsigned compare (a negative index wraps
    past the bound), one AND per tap and element; no output mask, since a lane past the output
    reads inside its plane or nothing and its store is masked; one pointer per kernel row, the kw
    taps at constant offsets from it (immediate offsets in the loads where sxw is 1)."""
    return [*window_tile_lines("C_OUT", rows_are_oh=dims < 3),
            "acc = tl.zeros([BLOCK_R, BLOCK_W], tl.float32)",
            "UT: tl.constexpr = tl.uint64 if I64 else tl.uint32",
            "for ci in range(CIG):",
            "    cin = (c // COG) * CIG + ci",
            "    wb = wgt + (c * CIG + ci) * (KD * KH * KW)",
            *(["    xc = x + n * sxn + cin * sxc"] if not pro else []),
            "    for kd in tl.static_range(KD):",
            "        di = d0 + kd * DD",
            "        md = di.to(UT, bitcast=True) < D",
            "        for kh in tl.static_range(KH):",
            "            hi = h0 + kh * DH",
            "            mh = md & (hi.to(UT, bitcast=True) < H)",
            *(["            xh = xc + (di * sxd + hi * sxh) + w0 * sxw"] if not pro else []),
            "            for kw in tl.static_range(KW):",
            "                wi = w0 + kw * DW",
            "                m = mh & (wi.to(UT, bitcast=True) < W)",
            *indent(tap, 16),
            "if HAS_BIAS:",
            "    acc += tl.load(bias + c).to(tl.float32)"]


class DepthwiseConvDirect(Template):
    # "rewrite" only to read the variant before partitioning (match() has no context), as
    # channels-last-layout does: `prologue: materialize` declines prologues there.
    kinds = ("conv", "rewrite")
    supports_prologue = True
    supports_epilogue = True
    priority = 10
    params = {"configs": [CONFIGS], **{k: list(v) for k, v in SETTINGS.items()}}
    _materialize = False

    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        self._materialize = ctx.params.get("prologue") == "materialize"
        return None

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
        # A prologue is re-applied on every tap: only cheap ops, and none where the variant says
        # to materialize it (the partitioner then leaves the chain a region of its own).
        if region.prologue and self._materialize:
            return False
        if any(o.kind not in CHEAP_OPS for o in region.prologue):
            return False
        return chain_ok(region.prologue) and chain_ok(region.epilogue)

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("conv_pool", CP_RUNTIME)
        ctx.share("cp_plans", CP_PLANS)
        ctx.share("pool", POOL_WINDOW)
        variant = settings(ctx.params)
        hoisted = variant["index_math"] == "hoisted"
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
        elif hoisted:
            tap.append("v = tl.load(xh + kw * DW * sxw, mask=m, other=0.0).to(tl.float32)")
        else:
            tap.append("v = tl.load(xh + wi * sxw, mask=m, other=0.0).to(tl.float32)")
        tap.append("acc += v * tl.load(wb + (kd * KH + kh) * KW + kw).to(tl.float32)")
        body = hoisted_taps(tap, pro is not None, dims) if hoisted else per_tap(tap, pro is not None)
        res = "acc"
        if epi:
            lines, res = epi.kernel_body({"n": "n", "c": "c", "d": "od[:, None]", "h": "oh[:, None]",
                                          "w": "ow[None, :]"}, "omask", acc="acc")
            body += lines
        body.append(f"tl.store(out + plane * R * OW + r[:, None] * OW + ow[None, :], {res}, mask=omask)")
        configs = ROW_CONFIGS if variant["tiles"] == "rows_per_thread" else ctx.params.get("configs", CONFIGS)
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
