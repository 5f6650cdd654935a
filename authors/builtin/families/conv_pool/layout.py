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

from typing import Any

from ...frontend.ir import Op, Program, Region, Value
from ...templates.base import EmitContext, Emitted
from ...templates.launch import autotune
from .common import (
    PIXEL_COORDS,
    conv_attr_args,
    conv_region,
    indent,
)

# Rationale (H200, problems/measurements/h200-2026-11-30-tf32/conv_layouts.txt, each problem's
# cuDNN convolution alone, TF32, NCHW -> NHWC): level2/02 Conv2d(44, 64, 112, 112) 0.522 -> 0.240 ms,
# level2/11 0.741 -> 0.464, level2/15 ConvTranspose2d 0.677 -> 0.482, level2/21 0.711 -> 0.407:
# 1.4-2.2x. The per-call input conversion costs one read and write of the input (level2/02:
# 141 MB, ~0.07 ms at ~4 TB/s), well under the gain; it pays wherever the NHWC gain exceeds two
# passes over the input, i.e. unless C_out * output pixels is small next to the input. Under
# strict fp32 NHWC was slower (level2/02 1.988 -> 2.226 ms), so the path is only for policies
# with TF32 convolutions. 3-D convolutions follow Inductor's layout optimisation
# (channels_last_3d) and are NOT measured here. Set to () to keep every call NCHW.
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


def _leaves(out: Any) -> list[Value]:
    if isinstance(out, Value):
        return [out]
    if isinstance(out, (list, tuple)):
        return [v for o in out for v in _leaves(o)]
    return []


def nhwc_readers(program: Program) -> set[str]:
    """Values read only as the input of channels-last convolutions (and not returned): a region
    producing one may leave it channels-last, which the reader would convert to anyway."""
    outputs = {v.name for v in _leaves(program.outputs)}
    found = set()
    for name, readers in program.users().items():
        if name not in outputs and readers and all(
                channels_last_rule(r) and r.inputs[0].name == name and
                all(v.name != name for v in r.inputs[1:]) for r in readers):
            found.add(name)
    return found


def emit_layout_conv(region: Region, ctx: EmitContext, channels_last: bool, keep_nhwc: bool) -> Emitted:
    """Kernel, launcher and forward line of a conv region: the vendor call (channels-last when
    `channels_last`), then bias + epilogue in one pass writing channels-last when `keep_nhwc`,
    else the reference's contiguous layout."""
    op, dims, transposed, out, epi = conv_region(region, ctx)
    kname, lname = ctx.name("conv_layout_kernel"), ctx.name("vendor_conv_layout")
    fmt = "torch.channels_last_3d" if dims == 3 else "torch.channels_last"

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
    epi_names = [f"b{i}" for i in range(len(epi_vals))]
    params = "x, w, b, stride, padding, dilation, groups" + (", output_padding" if transposed else "")
    call = (f"F.conv_transpose{dims}d(x, w, None, stride, padding, output_padding, groups, dilation)"
            if transposed else f"F.conv{dims}d(x, w, None, stride, padding, dilation, groups)")
    ret = "y if cl else y.contiguous()" if keep_nhwc else "y.contiguous()"
    ofmt = f"{fmt} if cl else torch.contiguous_format" if keep_nhwc else "torch.contiguous_format"
    launcher = [f"def {lname}({', '.join([params] + epi_names)}):",
                f"    dims = {dims}",
                f"    cl = {channels_last} and groups == 1 and x.dim() == dims + 2",
                "    if cl:  # cuDNN's TF32 kernels are NHWC (see the channels-last-layout skill)",
                f"        x = x.contiguous(memory_format={fmt})",
                f"        w = w.contiguous(memory_format={fmt})",
                f"    y = {call}",
                "    if _cp_strides(y, y.shape, dims)[5] < 0:  # neither layout: one pixel run needed",
                "        y = y.contiguous()",
                *(["    if b is None:", f"        return {ret}"] if not epi else []),
                "    n_, c_, (D, H, W) = _cp_planes(y.shape, dims)",
                "    L = D * H * W",
                # A fresh output, not in place: the autotuner re-runs the kernel while tuning.
                f"    out = torch.empty(y.shape, dtype={out.meta.dtype}, device=y.device,",
                f"                      memory_format={ofmt})",
                "    if y.numel() == 0:",
                "        return out"]
    split = "False"
    if epi:
        launcher += indent(epi.launch_lines(epi_names, "y.shape", "dims"), 4)
        split = "e_split"
    launcher += ["    sy = _cp_strides(y, y.shape, dims)",
                 "    so = _cp_strides(out, out.shape, dims)",
                 f"    i64 = _i64({', '.join(['y', 'out', *epi_names])})",
                 "    grid = lambda meta: (n_ * _cdiv(c_, meta['BLOCK_C']) * _cdiv(L, meta['BLOCK_L']),)",
                 f"    {kname}[grid](out, y, y if b is None else b, {'*e_args, ' if epi else ''}"
                 "c_, L, H, W, sy[0], sy[1], sy[5], so[0], so[1], so[5], "
                 f"HAS_BIAS=b is not None, SPLIT={split}, I64=i64)",
                 "    return out"]
    args = conv_attr_args(region) + [v.name for v in epi_vals]
    return Emitted(kernels=[kernel], helpers=["\n".join(launcher)],
                   lines=[f"{out.name} = {lname}({', '.join(args)})"])
