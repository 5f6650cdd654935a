"""Shared pieces of the convolution and pooling templates (skills/fused-pooling-window,
global-pool-as-row-reduction, vendor-conv-fused-tail, depthwise-conv-direct, conv-implicit-gemm,
conv3d-implicit-gemm, pointwise-conv-as-gemm, conv-transpose-gather).

Every kernel of this family knows the coordinates (n, c, d, h, w) of the elements it handles, so
fused pointwise prologues and epilogues address their external operands by coordinates
(`PlaneChain`) rather than by flat offsets (`ChainCode`): a per-channel operand then costs an
address multiply-add per element instead of the two integer divisions of `_bcast_off`, which at
4.3 TB/s would make a memory-bound pass ALU-bound (about 30 integer ops per element of budget).

Layer attributes (stride, padding, groups, kernel sizes) are read at run time from the module
(`self.conv.stride`, the weight's shape), never baked in from the SMALL capture, so a candidate
generated at small size stays correct at full size; they reach the kernels as constexprs.
"""

from __future__ import annotations

from typing import Any

from ...frontend.ir import Op, Region, Value
from ...runtime import COLLAPSE, CP_RUNTIME
from ..pointwise.codegen import chain_statements, external_inputs

_LOW = {"torch.float16", "torch.bfloat16"}
FLOATS = {"torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"}

# Pointwise ops cheap enough to recompute on every tap of a window (a few ALU ops, no
# transcendental): prologues of depthwise convolutions re-apply the chain kernel-size times.
CHEAP_OPS = {"identity", "relu", "clamp", "add", "sub", "rsub", "mul", "neg", "abs", "maximum", "minimum",
             "relu6", "leaky_relu", "where", "square", "hardsigmoid", "hardswish", "sign"}


def hashable_attr(expr: str, captured: Any) -> str:
    """The forward expression of a layer attribute that keys a launch-plan cache: wrapped in
    tuple() when it was captured as a list (nn.MaxPool2d([3, 3])), since lists do not hash."""
    return f"tuple({expr})" if isinstance(captured, list) else expr


def tup(v: Any, n: int) -> tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        v = tuple(int(x) for x in v)
        return v * n if len(v) == 1 else v
    return (int(v),) * n


def module_expr(op: Op) -> str | None:
    """`self.conv` for an op lowered from a module call (its torch_expr is `self.conv(x)`, or a
    rewrite that changed the call kept the module in attrs["module"])."""
    if isinstance(op.attrs.get("module"), str):
        return op.attrs["module"]
    expr = op.torch_expr
    if expr.startswith("self") and "(" in expr:
        return expr[:expr.index("(")]
    return None


def attr_expr(op: Op, name: str, value: Any) -> str:
    """How the generated forward reads a layer attribute: from the module at run time when the
    op is a module call, else the literal the forward passed (constant at any size)."""
    mod = module_expr(op)
    return f"{mod}.{name}" if mod is not None else repr(value)


def is_float(v: Value) -> bool:
    return v.meta is not None and str(v.meta.dtype) in FLOATS


def chain_ok(ops: list[Op], max_ext: int = 6) -> bool:
    """A fusable chain: float outputs, few external operands (each costs kernel parameters)."""
    return all(is_float(o.out) for o in ops) and len(external_inputs(ops)) <= max_ext


def single_output(region: Region) -> Value:
    """The one value a fused region produces (fuse.py lets no intermediate escape)."""
    outs = region.outputs or [region.output()]
    if len(outs) != 1 or outs[0].name != region.output().name:
        raise ValueError(f"region at {outs[0].name}: expected one output, got {[v.name for v in outs]}")
    return outs[0]


class PlaneChain:
    """A pointwise chain fused into a conv / pool kernel, its operands addressed by coordinates.

    `anchor` is the value the kernel already holds in registers (the conv or pool result, for an
    epilogue); None for a prologue, whose every operand is loaded. Each external operand gets a
    pointer and six strides from `_cp_strides` (n, c, d, h, w, j); the kernel supplies coordinate
    expressions, scalars or tensors that broadcast to the tile.
    """

    def __init__(self, ops: list[Op], anchor: Value | None, prefix: str):
        self.ops, self.anchor, self.p = ops, anchor, prefix
        self.ext = external_inputs(ops, produced={anchor.name} if anchor is not None else set())

    @property
    def empty(self) -> bool:
        return not self.ops

    def kernel_params(self) -> list[str]:
        p, n = self.p, len(self.ext)
        return [f"{p}_in{i}" for i in range(n)] + [f"{p}_s{i}_{k}" for i in range(n) for k in "ncdhwj"]

    def kernel_body(self, coords: dict[str, str], mask: str, acc: str | None = None,
                    split: str | None = None) -> tuple[list[str], str]:
        """Statements loading the operands and applying the chain; returns (lines, result var).
        With coordinates for both j and (d, h, w), the constexpr named `split` picks (d, h, w)."""
        p = self.p
        lines: list[str] = []
        env = {self.anchor.name: acc} if self.anchor is not None else {}

        def off(i: int, keys: str) -> str:
            terms = [f"({coords[k]}) * {p}_s{i}_{k}" for k in keys if k in coords]
            return " + ".join(terms) if terms else "0"

        for i, v in enumerate(self.ext):
            if split is not None and "j" in coords:
                lines += [f"if {split}:", f"    {p}_o{i} = {off(i, 'ncdhw')}", "else:",
                          f"    {p}_o{i} = {off(i, 'ncj')}"]
            else:
                lines.append(f"{p}_o{i} = {off(i, 'ncj' if 'j' in coords else 'ncdhw')}")
            cast = ".to(tl.float32)" if str(v.meta.dtype) in _LOW else ""
            lines.append(f"{p}_x{i} = tl.load({p}_in{i} + {p}_o{i}, mask={mask}, other=0){cast}")
            env[v.name] = f"{p}_x{i}"
        lines += chain_statements(self.ops, env, prefix=f"{p}t")
        return lines, env[self.ops[-1].out.name] if self.ops else (acc or "")

    def launch_lines(self, names: list[str], shape: str, dims: str) -> list[str]:
        """The launcher line defining `{p}_args` (pointers then strides) and `{p}_split` (True when
        an operand's spatial dims do not collapse into one strided run): runtime _cp_chain."""
        p = self.p
        return [f"{p}_args, {p}_split = _cp_chain([{', '.join(names)}], {shape}, {dims})"]


def indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + ln for ln in lines]


# The (d, h, w) coordinates of flat pixel index `jj` for a tail's epilogue: split when the epilogue
# reads per-pixel operands (SPLIT), else the flat index stands for all three.
PIXEL_COORDS = ["if SPLIT:", "    d = jj // (H * W)", "    h = (jj // W) % H", "    w = jj % W",
                "else:", "    d = jj", "    h = jj", "    w = jj"]


def window_tile_lines(channels: str, rows_are_oh: bool = False) -> list[str]:
    """Kernel prologue of the window kernels (pooling, direct convolution): program ->
    (plane = (n, c) with `channels` per batch item, tile of BLOCK_R output rows (od, oh
    flattened, R of them) x BLOCK_W output columns); defines n, c, r, ow, od, oh, omask and the
    window origins d0, h0, w0 (for args OD.. unused: R = OD * OH, OH, OW, SD.., PD.. constexprs).
    `rows_are_oh`: a 1-D / 2-D kernel, whose OD is 1, takes row r as oh at od 0 without dividing
    by OH (rows past R then only index in-plane or masked loads, and their stores are masked)."""
    return ["pid = tl.program_id(0)",
            "tiles_w = tl.cdiv(OW, BLOCK_W)",
            "per_plane = tl.cdiv(R, BLOCK_R) * tiles_w",
            "plane = pid // per_plane",
            "t = pid % per_plane",
            "r = (t // tiles_w) * BLOCK_R + tl.arange(0, BLOCK_R)",
            "ow = (t % tiles_w) * BLOCK_W + tl.arange(0, BLOCK_W)",
            "if I64:",
            "    plane = plane.to(tl.int64)",
            "    r = r.to(tl.int64)",
            "    ow = ow.to(tl.int64)",
            f"n = plane // {channels}",
            f"c = plane % {channels}",
            *(["od = r * 0", "oh = r"] if rows_are_oh else ["od = r // OH", "oh = r % OH"]),
            "omask = (r < R)[:, None] & (ow < OW)[None, :]",
            "d0 = (od * SD - PD)[:, None]",
            "h0 = (oh * SH - PH)[:, None]",
            "w0 = (ow * SW - PW)[None, :]"]


WINDOW_CONSTS = ["KD", "KH", "KW", "SD", "SH", "SW", "PD", "PH", "PW", "DD", "DH", "DW"]

def conv_bias_expr(op: Op) -> str:
    """The forward's expression of a conv op's bias: the module's, read at run time, or the
    operand passed; "None" when it has none or a norm after it absorbed it (norms/absorb.py)."""
    if op.attrs.get("bias") is False:
        return "None"
    mod = module_expr(op)
    if mod is not None:
        return f"{mod}.bias"
    return op.inputs[2].name if len(op.inputs) > 2 else "None"


def tail_runs(args: list[str], epi: object) -> bool:
    """A vendor convolution's tail pass ever runs: it has a bias (`args` from conv_attr_args) or
    a fused epilogue. Without either the launcher gets no tail kernel (None)."""
    return epi is not None or args[2] != "None"


def conv_attr_args(region: Region) -> list[str]:
    """Forward-side expressions for (x, weight, bias, stride, padding, dilation, groups[,
    output_padding]) of a conv op: the module's attributes, read at run time, or the literals the
    forward passed (hashable)."""
    op = region.anchor
    mod = module_expr(op)
    names = ["stride", "padding", "dilation", "groups"] + (["output_padding"]
                                                           if op.kind == "conv_transpose" else [])
    bias = conv_bias_expr(op)
    if mod is not None:
        return [op.inputs[0].name, f"{mod}.weight", bias] + [f"{mod}.{n}" for n in names]
    vals = [op.attrs.get(n, 0) if n == "output_padding" else op.attrs[n] for n in names]
    # tuples, not lists: the attributes key the launchers' plan caches
    return [op.inputs[0].name, op.inputs[1].name, bias] + [repr(tuple(v) if isinstance(v, list) else v)
                                                           for v in vals]


def one_channel_groups(op: Op) -> bool:
    """Each group reads one input channel (depthwise, or a single-channel input): a direct
    kernel's case; an implicit GEMM would pad its K tile of one channel per tap to 16-32."""
    w = op.inputs[1] if len(op.inputs) > 1 else None
    return w is not None and w.is_tensor and w.meta.rank >= 3 and w.meta.shape[1] == 1


def conv_ok(region: Region, fp32_only: bool = False) -> bool:
    """A conv / conv_transpose region the templates can emit: a module-like call with a weight
    operand, numeric padding, a supported rank and a fusable epilogue. `fp32_only` for the
    tensor-core kernels (their tl.dot precision argument is for fp32 operands)."""
    op = region.anchor
    if op is None or op.kind not in ("conv", "conv_transpose") or op.out.meta is None:
        return False
    dims = op.attrs.get("dims")
    x = op.inputs[0]
    if dims not in (1, 2, 3) or not is_float(x) or x.meta.rank not in (dims + 1, dims + 2):
        return False
    if len(op.inputs) < 2 or not op.inputs[1].is_tensor or isinstance(op.attrs.get("padding"), str):
        return False
    if fp32_only and {str(x.meta.dtype), str(op.inputs[1].meta.dtype)} != {"torch.float32"}:
        return False
    return chain_ok(region.epilogue)


def conv_region(region: Region, ctx: Any) -> tuple[Op, int, bool, Value, PlaneChain | None]:
    """Where every conv emitter starts: the shared runtime registered in `ctx`, then the anchor
    conv, its rank, whether it is transposed, the region's output and its fused epilogue (None)."""
    ctx.share("collapse", COLLAPSE)
    ctx.share("conv_pool", CP_RUNTIME)
    op = region.anchor
    epi = PlaneChain(region.epilogue, op.out, "e") if region.epilogue else None
    return op, op.attrs["dims"], op.kind == "conv_transpose", single_output(region), epi
