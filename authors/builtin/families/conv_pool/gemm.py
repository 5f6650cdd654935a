"""Implicit-GEMM convolution kernels (forward and transposed, 1D-3D, grouped), shared by the
templates conv-implicit-gemm, conv3d-implicit-gemm, pointwise-conv-as-gemm and
conv-transpose-gather.

GEMM view per group: M = output pixels (n, od, oh, ow), N = output channels of the group,
K = taps x input channels of the group. The input tile X[M, K] is gathered from the NC(DHW)
input on the fly (no im2col buffer; int32 offsets unless the tensors need int64) with pixels as
its fastest dim, so consecutive lanes read consecutive addresses (ow); it is the register
operand of the tensor-core dot, split into TF32 hi / lo in registers. The weight is permuted
once per call to (taps, C_out, C_in per group) so its tile W[K, N] is K-major in shared memory,
as the TF32 wgmma wants. The accumulator is transposed once after the loop and stored
pixel-fastest, coalesced into NC(DHW). (Measured offline with ptxas for sm_90a: this
orientation does not spill in the K loop; the swapped one spilled 1-4 KB.)
The K loop is one flat loop over (tap, channel chunk), which Triton software-pipelines
(num_stages, cp.async) across taps. Under strict fp32 both operands are prepared once per call as
fp16 hi / lo parts of power-of-two scaled values (the input channels last, [N * groups, pixels,
C_in per group padded]) and three fp16 dots per step keep fp32 accuracy on tensor cores (see
_a_step); the `parts="tf32"` variant keeps the older TF32 parts (weight pre-split, activation split
in registers); under the `tf32` policy one pass. Bias and the
pointwise chain after the conv run on the accumulator before the only store.

Measured on an H200 (problems/measurements/h200-2026-11-30-conv16/, do_bench, conv-led problems):
fp16 parts ran 1.1-1.6x faster than TF32 parts (level1/43: 2.76 against 4.32 ms), yet the kernel
reaches only ~15% of the fp16 tensor-core peak: Nsight Compute shows one 8-warp CTA per SM
(255 registers, 197 KB of shared memory), 25% issue slots busy and L2 throughput at 52%, so
loads and per-step overhead rather than the tensor cores set its pace.

Transposed convolutions are computed output-centric by sub-pixel phase: the grid's second axis
enumerates (group, phase) with phase = (od % SD, oh % SH, ow % SW); inside one phase every tile
pixel needs the same taps, those with (phase + pad - k * dil) divisible by the stride, so with
dilation 1 the loop visits exactly the contributing taps (1/stride^d of them): no zero
insertion, no scatter, no atomics.
"""

from __future__ import annotations

from ...frontend.ir import Region
from ...runtime import CONV_GEMM, CONV_PARTS, GEMM_PREP
from ...templates.base import EmitContext, Emitted, Template
from ...templates.launch import autotune
from .common import conv_attr_args, conv_region, indent
from .conv_launch import ConvLaunch
from .gemm_body import _CONSTS, _forward_body, _transposed_body

# Rationale (H200, fp32 via tf32x3 = 3 tensor-core passes per tile; checked offline with ptxas /
# cuobjdump for sm_90a: every config fits 227 KB of shared memory and none spills inside the K
# loop; long epilogues may spill a few hundred bytes once per tile, after the loop):
# 128 pixels x 128 channels x 32, 8 warps, 3 stages is the workhorse for C_out >= 128;
# 256 x 64 (8 warps) and 128 x 64 (4 warps) serve C_out 64-96; 64 x 128 small images with many
# channels; 128 x 32 (C_out per group <= 32) avoids wasting half the channel tile. BLOCK_K = 32
# matches typical C_in per tap (32-512); tiny C_in (3) wastes the K tile, where cuDNN is the
# better tool. The first entry is the interpreter's only one.
GEMM_CONFIGS = [({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, 4, 3),
                ({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, 8, 3),
                ({"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32}, 8, 3),
                ({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, 4, 3),
                ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, 4, 4),
                ({"BLOCK_M": 128, "BLOCK_N": 32, "BLOCK_K": 32}, 4, 4)]

# Rationale: a 1x1 conv is a plain GEMM with K = C_in (64-1024): deeper K tiles halve the loop
# trips where registers allow; wide pixel tiles stream the contiguous NCHW rows.
POINTWISE_CONFIGS = [({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, 4, 3),
                     ({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, 8, 3),
                     ({"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32}, 8, 3),
                     ({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 8, 3),
                     ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, 4, 3),
                     ({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, 4, 3)]

# fp16 parts (strict fp32): BLOCK_K is the launch plan's scale chunk (runtime conv_parts), min(64,
# C_in per group rounded up to a power of two, >= 16), so the tile lists fix only M x N, warps and
# stages. Two fp16 parts of a 64-wide step take (BM + BN) x 256 bytes of shared memory per stage:
# 128 x 128 uses 64 KB, so three stages fit the H200's 227 KB; 256 x 64 (80 KB) gets two. On an
# H200 the autotuner picked 128 x 128, 8 warps, 3 stages on all five problems checked
# (call5_row_scales.txt).
F16_CONFIGS = [({"BLOCK_M": 128, "BLOCK_N": 64}, 4, 3),
               ({"BLOCK_M": 128, "BLOCK_N": 128}, 8, 3),
               ({"BLOCK_M": 256, "BLOCK_N": 64}, 8, 2),
               ({"BLOCK_M": 64, "BLOCK_N": 128}, 4, 3),
               ({"BLOCK_M": 64, "BLOCK_N": 64}, 4, 4),
               ({"BLOCK_M": 128, "BLOCK_N": 32}, 4, 4)]

def emit_conv_gemm(region: Region, ctx: EmitContext, configs: list) -> Emitted:
    """The implicit-GEMM kernel and launcher for a conv / conv_transpose region (+ epilogue)."""
    op, dims, transposed, out, epi = conv_region(region, ctx)
    kname = ctx.name("convt_gemm_kernel" if transposed else "conv_gemm_kernel")
    lname = ctx.name("convt_gemm" if transposed else "conv_gemm")
    # One-pass TF32 only under `tf32`: under `default` the static checks keep every Triton dot
    # fp32-accurate (a dot cannot say it does a convolution's work); eager's TF32 convolutions are
    # matched there by the vendor path (channels-last-layout, vendor-conv-fused-tail).
    prec = "tf32" if ctx.matmul_tf32 else "tf32x3"
    f16 = prec == "tf32x3" and ctx.params.get("parts", "f16") == "f16"

    ctx.share("conv_gemm", CONV_GEMM)
    if prec == "tf32x3":
        ctx.share("gemm_prep", GEMM_PREP)
        ctx.share("conv_parts", CONV_PARTS)
    # x is the fp16 hi part with fp16 parts (xlo its lo part, xsc / wsc the scale bounds); the
    # strided fp32 input otherwise (xlo, xsc, wsc unused).
    sig = ["out", "x", "xlo", "xsc", "wt", "wtl", "wsc", "bias", *(epi.kernel_params() if epi else []),
           "M", "NB", "C_IN", "C_OUT", "CIG", "CIGP", "COG", "D", "H", "W", "OD", "OH", "OW",
           "sxn", "sxc", "sxd", "sxh", "sxw"]
    parts = "f16" if f16 else "tf32"
    body = _transposed_body(prec, parts) if transposed else _forward_body(prec, parts)
    # After the loop the tile is transposed to (channels, pixels): pixels are then the fastest dim,
    # so the stores (and the epilogue's loads) of consecutive lanes hit consecutive addresses.
    body += ["if HAS_BIAS:",
             "    acc += tl.load(bias + co, mask=n_ok, other=0.0).to(tl.float32)[:, None]",
             "omask = n_ok[:, None] & m_ok[None, :]"]
    res = "acc"
    if epi:
        coords = {"n": "nb[None, :]", "c": "co[:, None]", "d": "od[None, :]", "h": "oh[None, :]",
                  "w": "ow[None, :]"}
        coords["j"] = "sp[None, :]"
        lines, res = epi.kernel_body(coords, "omask", acc="acc", split="SPLIT")
        body += lines
    body.append(f"tl.store(out + nb[None, :] * C_OUT * (OD * OH * OW) + co[:, None] * (OD * OH * OW) "
                f"+ sp[None, :], {res}, mask=omask)")
    configs = ctx.params.get("configs", configs)
    if f16:
        # BLOCK_K is the preparation's scale chunk, fixed by the launch plan (see F16_CONFIGS)
        configs = ctx.params.get("f16_configs", F16_CONFIGS)
    kernel = (autotune(configs, ["M", "COG", "CIG", "KD", "KH", "KW"])
              + f"def {kname}({', '.join(sig + [f'{c}: tl.constexpr' for c in _CONSTS])}):\n"
              + "\n".join(indent(body, 4)))

    epi_vals = epi.ext if epi else []
    # The plan (geometry, weight permutation, operand parts' plans, strides, constexprs, grid)
    # depends on the operands' metadata and the layer's attributes only: runtime _cv_gemm_run
    # computes it once per key, so a call costs the lookup, the output, the operand parts and
    # the launch.
    parts = "_cv_f16_parts" if f16 else "_cv_tf32_parts" if prec == "tf32x3" else "_cv_one_pass"
    launch = ConvLaunch(name=lname, plans=f"{lname}_plans", run="_cv_gemm_run", kernel=kname, how=parts,
                        transposed=transposed, n_epi=len(epi_vals), dtype=str(out.meta.dtype),
                        consts=(dims, transposed))
    args = conv_attr_args(region) + [v.name for v in epi_vals]
    return Emitted(kernels=[kernel], helpers=[launch.render()],
                   lines=[f"{out.name} = {lname}({', '.join(args)})"])


class ConvGemmTemplate(Template):
    """What the implicit-GEMM conv templates share (conv-implicit-gemm, conv3d-implicit-gemm,
    pointwise-conv-as-gemm, conv-transpose-gather): this kernel with a fused epilogue, applied by
    skill, the tile list in params["configs"] and the operand parts ("f16" first) in
    params["parts"]; each subclass says which regions it matches."""

    supports_epilogue = True
    default = False
    priority = 20
    params = {"configs": [GEMM_CONFIGS], "parts": ["f16", "tf32"]}
    # Each conv region costs three launches (two operand preparations and an autotuned kernel of
    # ~40 arguments): 0.1-0.5 ms of host time per forward, measured on an H200 under the timing
    # protocol (level2/05, 12, level3/04, 12), which graph replay removes.
    graph_replay = "cuda-graph-replay"

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        return emit_conv_gemm(region, ctx, self.params["configs"][0])
