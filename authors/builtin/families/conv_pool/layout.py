"""The vendor convolution in a chosen memory layout (skills/channels-last-layout), with its bias and
pointwise tail in one Triton pass that reads the convolution's output and writes the result
through strides, so either side may be NCHW or channels-last (NHWC / NDHWC).

The pass tiles (BLOCK_L output pixels) x (BLOCK_C channels) of one image: with channels-last
data the channel tile is a contiguous run, with NCHW the pixel tile is, and Triton's coalescing
picks each access's order from the strides (a stride of 1 is specialised, so it is known at
compile time); an NHWC -> NCHW pass transposes through shared memory for free inside a pass that
reads and writes every element anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...frontend.ir import Op, Program, Region, leaves
from ...runtime import CONV_LAYOUT
from ...templates.base import EmitContext, Emitted
from ...templates.launch import autotune
from ..norms.match import parse_norm
from .common import PIXEL_COORDS, conv_attr_args, conv_region, indent, tail_runs
from .conv_launch import ConvLaunch

# Rationale (H200, problems/measurements/h200-2026-11-30-tf32/conv_layouts.txt, each problem's cuDNN
# convolution alone, TF32, NCHW -> NHWC): level2/02 Conv2d(44, 64, 112, 112) 0.522 -> 0.240 ms,
# level2/11 0.741 -> 0.464, level2/15 ConvTranspose2d 0.677 -> 0.482, level2/21 0.711 -> 0.407:
# 1.4-2.2x. The per-call input conversion costs one read and write of the input, through the runtime's
# tiled transpose (runtime/conv_layout.py; H200, 2026-12-03, tests/gpu/conv_layouts.py in
# problems/measurements/h200-2026-12-03-conv-transpose/: level2/02's 141 MB in 0.073 ms, 3.6-4.0 TB/s,
# where aten's strided copy took 0.199 ms and, in h200-2026-12-02-bench-level2/'s forwards, up to 0.67
# ms), well under the gain; it pays wherever the NHWC gain exceeds two passes over the input, i.e.
# unless C_out * output pixels is small next to the input. Under strict fp32 NHWC was slower (level2/02
# 1.988 -> 2.226 ms), so the path is only for policies with TF32 convolutions. 3-D convolutions follow
# Inductor's layout optimisation (channels_last_3d); level2/18's Conv3d(2, 32, 32, 112, 112) went 0.820
# -> 0.517 ms in TF32 (H200, 2026-12-03, problems/measurements/h200-2026-12-03-conv-transpose/). Set to
# () to keep every call NCHW.
CHANNELS_LAST_DIMS: tuple[int, ...] = (2, 3)

# Rationale: a memory-bound pass wants ~2-4K elements per program with 16-byte accesses along the
# contiguous run: 64-128 channels (256-512 B) x 16-32 pixels for NHWC, wide pixel tiles for NCHW
# data or few channels. The first entry is the interpreter's.
CONFIGS = [({"BLOCK_L": 32, "BLOCK_C": 64}, 4, 2), ({"BLOCK_L": 16, "BLOCK_C": 128}, 4, 2),
           ({"BLOCK_L": 64, "BLOCK_C": 64}, 8, 2), ({"BLOCK_L": 128, "BLOCK_C": 16}, 4, 2),
           ({"BLOCK_L": 256, "BLOCK_C": 8}, 4, 2), ({"BLOCK_L": 1024, "BLOCK_C": 2}, 4, 2)]


def channels_last_rule(op: Op) -> bool:
    """The convolution runs channels-last: a batched 2-D / 3-D (transposed) convolution without
    groups. Grouped ones with several input channels per group stay NCHW (Inductor's heuristic
    notes up to 31x slower cuDNN calls in channels-last); depthwise ones are
    depthwise-conv-direct's. The launcher re-checks groups and rank at run time."""
    dims = op.attrs.get("dims")
    x = op.inputs[0]
    return (op.kind in ("conv", "conv_transpose") and dims in CHANNELS_LAST_DIMS
            and op.attrs.get("groups", 1) == 1 and x.meta is not None and x.meta.rank == dims + 2)



def _reads_nhwc(op: Op, name: str) -> bool:
    """`op` reads value `name` as its main input only, and reads it channels-last: a convolution
    on this path (it would convert to channels-last anyway), or a 4-D / 5-D batch, group or
    instance norm the norm templates take (its statistics and apply read NHWC in place, the apply
    writing NCHW, or NHWC where its own readers are all convolutions)."""
    if op.inputs[0].name != name or any(v.name == name for v in op.inputs[1:]):
        return False
    if op.kind in ("batch_norm", "group_norm", "instance_norm"):
        x = op.inputs[0]
        return x.meta is not None and x.meta.rank in (4, 5) and parse_norm(op) is not None
    return channels_last_rule(op)


def nhwc_readers(program: Program) -> set[str]:
    """Values read only channels-last (_reads_nhwc) and not returned: a region producing one may
    leave it channels-last, which saves converting it back to NCHW."""
    outputs = {v.name for v in leaves(program.outputs)}
    return {name for name, readers in program.users().items()
            if name not in outputs and readers and all(_reads_nhwc(r, name) for r in readers)}


@dataclass
class SharedInputs:
    """Values that two or more channels-last convolutions read as their input, and nothing else
    reads (a ResNet block's input, read by its first convolution and by its downsampling
    shortcut): the first region reading one converts it to channels-last, later ones read that
    copy, on which their launcher's own conversion does nothing. Only convolutions read such a
    value, so no op between them can write it in place."""

    copies: dict[str, str] = field(default_factory=dict)
    """Value -> the name of its channels-last copy in the forward."""
    made: set[str] = field(default_factory=set)
    """Values whose copy an emitted line already makes."""


def shared_conv_inputs(program: Program) -> SharedInputs:
    """The program's SharedInputs, each copy named after its value and unused by the program."""
    outputs = {v.name for v in leaves(program.outputs)}
    taken = set(program.values) | {v.name for v in program.inputs} | {op.out.name for op in program.ops}
    copies = {}
    for name, readers in program.users().items():
        if name not in outputs and len(readers) >= 2 and \
                all(channels_last_rule(r) and _reads_nhwc(r, name) for r in readers):
            copy = f"_{name}_nhwc"
            while copy in taken:
                copy += "_"
            copies[name] = copy
    return SharedInputs(copies)


def emit_layout_conv(region: Region, ctx: EmitContext, channels_last: bool, keep_nhwc: bool,
                     shared: SharedInputs | None = None) -> Emitted:
    """Kernel, launcher and forward line of a conv region: the vendor call (channels-last when
    `channels_last`), then bias + epilogue in one pass writing channels-last when `keep_nhwc`,
    else the reference's contiguous layout. `shared`: the program's inputs several convolutions
    read, converted once (SharedInputs)."""
    op, dims, transposed, out, epi = conv_region(region, ctx)
    ctx.share("conv_layout", CONV_LAYOUT)
    kname, lname = ctx.name("conv_layout_kernel"), ctx.name("vendor_conv_layout")

    sig = ["out", "y", "bias", *(epi.kernel_params() if epi else []), "C", "L", "H", "W",
           "syn", "syc", "syj", "son", "soc", "soj"]
    const = ["HAS_BIAS", "SPLIT", "I64", "BLOCK_L", "BLOCK_C"]
    body = ["pid = tl.program_id(0)",
            "tiles_c = tl.cdiv(C, BLOCK_C)",
            "tiles_l = tl.cdiv(L, BLOCK_L)",
            "t = pid // tiles_c",
            "n = t // tiles_l",
            "c = (pid % tiles_c) * BLOCK_C + tl.arange(0, BLOCK_C)",
            "j = (t % tiles_l) * BLOCK_L + tl.arange(0, BLOCK_L)",
            "if I64:",
            "    n = n.to(tl.int64)",
            "    c = c.to(tl.int64)",
            "    j = j.to(tl.int64)",
            "cmask = (c < C)[None, :]",
            "m = (j < L)[:, None] & cmask",
            "cc = c[None, :]",
            "jj = j[:, None]",
            "acc = tl.load(y + (n * syn + jj * syj + cc * syc), mask=m, other=0.0).to(tl.float32)",
            "if HAS_BIAS:",
            "    acc += tl.load(bias + cc, mask=cmask, other=0.0).to(tl.float32)"]
    res = "acc"
    if epi:
        body += PIXEL_COORDS
        lines, res = epi.kernel_body({"n": "n", "c": "cc", "d": "d", "h": "h", "w": "w", "j": "jj"}, "m",
                                     acc="acc", split="SPLIT")
        body += lines
    body.append(f"tl.store(out + (n * son + jj * soj + cc * soc), {res}, mask=m)")
    configs = ctx.params.get("configs", CONFIGS)
    # The strides of the pixel run join the key: one kernel source may serve an NHWC -> NHWC and
    # an NHWC -> NCHW region of equal sizes, whose best tiles differ.
    kernel = (autotune(configs, ["C", "L", "syj", "soj"])
              + f"def {kname}({', '.join(sig + [f'{c}: tl.constexpr' for c in const])}):\n"
              + "\n".join(indent(body, 4)))

    epi_vals = epi.ext if epi else []
    # The vendor call runs per call; the tail's plan (output strides, stride arguments,
    # constexprs, grid) depends on the conv output's and the operands' metadata only: runtime
    # _cv_layout_run computes it once per key.
    conv = f"F.conv_transpose{dims}d" if transposed else f"F.conv{dims}d"
    args = conv_attr_args(region) + [v.name for v in epi_vals]
    tail = tail_runs(args, epi)
    launch = ConvLaunch(name=lname, plans=f"{lname}_plans", run="_cv_layout_run",
                        kernel=kname if tail else "None", how=conv, transposed=transposed,
                        n_epi=len(epi_vals), dtype=str(out.meta.dtype),
                        consts=(dims, channels_last, keep_nhwc))
    lines = []
    x = args[0]
    if channels_last and shared is not None and x in shared.copies:
        if x not in shared.made:  # the first reader: convert here, through the launcher's plan cache
            shared.made.add(x)
            fmt = "torch.channels_last_3d" if dims == 3 else "torch.channels_last"
            lines.append(f"{shared.copies[x]} = _cv_relayout({x}, {fmt}, {launch.plans})")
        args[0] = shared.copies[x]
    return Emitted(kernels=[kernel] if tail else [], helpers=[launch.render()],
                   lines=[*lines, f"{out.name} = {lname}({', '.join(args)})"])
