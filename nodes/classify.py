"""Bottleneck classification and the profile signature the skill index embeds.

Pure functions over typed records, so every threshold is unit-testable on a laptop. The numbers
behind the thresholds are Nsight Compute and torch.profiler measurements on our H200, committed
as tests/fixtures/profiles/ (eager softmax, a hand-written softmax, a 3840^3 SGEMM, a 4-layer
MLP, conv + batch norm + ReLU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..state.output import plural
from ..state.records import KernelStat, Profile
from ..state.vocab import Bottleneck, Structure

# ---- thresholds ----------------------------------------------------------------------------
# Rationale: ncu's own SpeedOfLight rule calls "compute throughput and/or memory bandwidth below
# 60% of peak" latency issues, so a unit at >= 60% of its peak is the limiter. Fixtures: softmax
# DRAM 70% / L2 85%, ReLU DRAM 84%, cuBLAS SGEMM SM 80%; the cuDNN batch-norm kernel's busiest
# unit is L2 at 57% (128 blocks on 132 SMs): not bound by any unit.
BUSY_PCT = 60.0
# Rationale: with less than one wave of blocks (ncu 'Waves Per SM' < 1, Kineto 'blocks per SM'
# < 1) SMs sit idle for the whole kernel: the batch-norm kernel (0.48 waves) and the last MLP GEMM
# (0.24 waves) stay below 60% on every unit.
MIN_WAVES = 1.0
# Rationale: at <= 25% theoretical occupancy (<= 16 of 64 warps per SM), set by registers or shared
# memory, a kernel with no unit >= 60% busy has too few warps to hide latency: the cuDNN TF32 conv
# of conv_bn_relu (234 registers per thread, 12.5%) sits at SM 59%, L1 57%.
LOW_OCCUPANCY_PCT = 25.0
# Rationale: a launch costs ~2-3 us of GPU ramp-up and drain on the H200; below 5 us per launch
# that overhead dominates whatever the kernel does (the fixture's 2 us `add_` on one block).
TINY_KERNEL_US = 5.0
# Rationale: eager PyTorch spends ~5-10 us of host time per op; when the GPU idles >= 30% of the
# forward's time across >= 3 launches, removing launches (CUDA graphs, fusion) wins >= 1.4x before
# any kernel gets faster. With 1-2 launches part of the idle time is the forward's fixed Python
# cost, which no skill removes: ask for >= 50%.
IDLE_FRACTION, IDLE_FRACTION_FEW, MANY_LAUNCHES = 0.3, 0.5, 3
# Rationale: a forward more than 8x over its bytes floor moves its data at < 13% of the copy
# bandwidth (< 540 GB/s): no streaming kernel is that slow unless too little work is in flight
# (a layer norm over 16 rows of 4M floats ran 61x over: one block per row). Without ncu this is
# the only latency evidence there is.
LATENCY_HEADROOM = 8.0
# Our H200's measured ceilings (eval/timing/roofline.py: copy read+write, fp32 cuBLAS matmul, TF32 off);
# static profiles (no GPU) state their floor and ridge point on these.
REFERENCE_GPU, REFERENCE_BANDWIDTH_GBS, REFERENCE_FP32_TFLOPS = "NVIDIA H200", 4175.0, 50.9

# ---- op names -> kernel structures -----------------------------------------------------------
_GEMM = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "bilinear", "matrix_exp"}
_REDUCE = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "logsumexp", "var",
           "std", "norm", "softmax", "log_softmax", "all", "any", "count_nonzero"}
_NORMS = {"layer_norm", "rms_norm", "group_norm", "instance_norm", "normalize", "local_response_norm"}
_LOSSES = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "kl_div",
           "cosine_similarity", "triplet_margin_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "margin_ranking_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"}
_ROW_LOSSES = {"cross_entropy", "nll_loss", "cosine_similarity", "cosine_embedding_loss",
               "triplet_margin_loss"}
_SCANS = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}
_RECURRENT = {"lstm", "gru", "rnn", "lstm_cell", "gru_cell", "rnn_cell"}
_ATTENTION = {"scaled_dot_product_attention", "multihead_attention"}
POINTWISE = {"relu", "gelu", "silu", "sigmoid", "tanh", "add", "mul", "sub", "div", "clamp", "exp", "log",
             "leaky_relu", "elu", "celu", "selu", "softplus", "mish", "hardswish", "hardsigmoid", "where",
             "pow", "abs", "neg", "sqrt", "rsqrt", "relu6", "logsigmoid", "softsign", "tanhshrink", "erf",
             "maximum", "minimum", "rsub", "reciprocal", "square", "sign", "masked_fill", "dropout"}
# Rationale: a level-2 chain is 2-5 operators; a forward of >= 6 compute operators (level 3
# models) is a graph of many kernels, whose launches and intermediates are worth a look of their own.
MANY_OPS = 6


@dataclass(frozen=True)
class OpDesc:
    """One operator of the reference forward, as the profiler describes it."""

    name: str
    """Lowercase torch name: conv2d, batch_norm, max_pool2d, cumsum, tril, ..."""
    inner: bool | None = None
    """For reductions: does it reduce the innermost (contiguous) dimension? None: not known."""


def structures_of_op(op: OpDesc) -> list[Structure]:
    n, out = op.name, []
    if n in _GEMM:
        out.append("gemm")
    elif re.fullmatch(r"conv_transpose[123]d", n):
        out.append("conv-transpose")
    elif re.fullmatch(r"conv[123]d", n):
        out.append("conv")
    elif re.fullmatch(r"(adaptive_)?(max|avg)_pool[123]d", n):
        out.append("pooling")
    elif n in _SCANS:
        out.append("scan")
    elif n in _RECURRENT:
        out += ["recurrent", "gemm"]
    elif n in _ATTENTION:
        out += ["attention", "gemm"]
    elif n == "batch_norm":
        out += ["normalization", "column-reduction"]
    elif n in _NORMS:
        out += ["normalization", "row-reduction"]
    elif n in _LOSSES:
        out += ["loss", "row-reduction" if n in _ROW_LOSSES else "elementwise"]
    elif n in _REDUCE:
        out.append("column-reduction" if op.inner is False else "row-reduction")
    elif n in POINTWISE:
        out.append("elementwise")
    return out


def structures_of(ops: list[OpDesc] | list[str], compute_ops: int | None = None) -> list[Structure]:
    """Kernel structures of a forward, most specific first: attention when a softmax sits between
    two GEMMs, normalization for a norm spelled out in primitives, multi-kernel-graph for forwards
    of MANY_OPS or more operators."""
    descs = [o if isinstance(o, OpDesc) else OpDesc(o) for o in ops]
    found: list[Structure] = []
    names = [o.name for o in descs]
    if "softmax" in names and sum(n in ("matmul", "bmm") for n in names[:names.index("softmax")]) and \
            any(n in ("matmul", "bmm") for n in names[names.index("softmax"):]):
        found.append("attention")
    if "rsqrt" in names and {"mean", "sum"} & set(names):
        found.append("normalization")  # a norm written out: x * rsqrt(mean(x^2) + eps)
    for o in descs:
        found += [s for s in structures_of_op(o) if s not in found]
    if (compute_ops if compute_ops is not None else len(descs)) >= MANY_OPS:
        found.append("multi-kernel-graph")
    return found or ["elementwise"]


# Kernel name -> structure, first match, case-insensitive. Convolutions before GEMMs (cuDNN convs
# are 'implicit_gemm' kernels), PyTorch's generic elementwise and copy kernels before the op
# words their template arguments may carry, normalisation before reduction.
# Names of Triton kernels count too (`_nrm_stats_kernel`, `_attn_fwd_kernel`, `_cv_transpose_kernel`):
# an unrecognised name takes the forward's main structure, which in a CNN labelled every norm and
# layout kernel "conv" and sent the planner to a convolution skill for a normalization kernel
# (H100, 2026-12-06, problems/measurements/h100-2026-12-06-judge-gap/).
_KERNEL_STRUCTURES: list[tuple[str, Structure]] = [
    (r"dgrad|conv_?transpose|col2im", "conv-transpose"),
    (r"fprop|(?<![a-z])conv(?!ert)|implicit_gemm|winograd|im2col|depthwise", "conv"),
    (r"gemm|gemv|matmul|kernel2|cutlass|cublas|bmm", "gemm"),
    (r"attention|flash|fmha|sdpa|(?<![a-z])attn", "attention"),
    (r"bn_fw|batch_?norm|layer_?norm|group_?norm|rms_?norm|instance_?norm|(?<![a-z])nrm|welford"
     r"|(?<![a-z])norm(?!al)", "normalization"),
    (r"elementwise_kernel|memset|memcpy|nchwto|nhwcto|copy_kernel|fill_kernel|cat_|transpose|permute"
     r"|relayout|pointwise", "elementwise"),
    (r"scan|cumsum|cumprod", "scan"),
    (r"pool", "pooling"),
    (r"lstm|gru|rnn", "recurrent"),
    (r"softmax|reduce|argmax|argmin|logsumexp|_sum|_mean", "row-reduction"),
]


def kernel_structure(name: str, forward: list[Structure]) -> Structure | None:
    """The structure a kernel's name reveals; a generic reduction takes the forward's reduction
    kind; an unrecognised name (a Triton candidate's) takes the forward's main structure."""
    for pattern, s in _KERNEL_STRUCTURES:
        if re.search(pattern, name, re.IGNORECASE):
            if s == "row-reduction" and "column-reduction" in forward and "row-reduction" not in forward:
                return "column-reduction"
            return s
    main = [s for s in forward if s != "multi-kernel-graph"]
    return main[0] if main else None


# ---- classification -------------------------------------------------------------------------
@dataclass(frozen=True)
class Diagnosis:
    bottleneck: Bottleneck
    rationale: str
    shares: dict[str, float] = field(default_factory=dict)
    """Share of GPU time per kernel class (launch-bound: the idle share)."""


def _v(x: float | None) -> float:
    return x or 0.0


def classify_kernel(k: KernelStat) -> tuple[Bottleneck | None, str]:
    """One kernel's class and the numbers behind it; (None, '') when the evidence is too thin."""
    per_launch = k.duration_us or k.time_us / max(k.launches, 1)
    if per_launch < TINY_KERNEL_US:
        return "latency-bound", f"{per_launch:.1f} us per launch (< {TINY_KERNEL_US:g} us): launch overhead"
    if k.kind != "kernel":
        return "memory-bound", f"a {k.kind}: moves data only"
    if k.sm_pct is not None or k.dram_pct is not None:  # Nsight Compute metrics
        mem, sm = max(_v(k.dram_pct), _v(k.l2_pct)), max(_v(k.sm_pct), _v(k.l1_pct), _v(k.tensor_pct))
        units = (f"DRAM {_v(k.dram_pct):.0f}%, L2 {_v(k.l2_pct):.0f}%, SM {_v(k.sm_pct):.0f}%, "
                 f"L1 {_v(k.l1_pct):.0f}%")
        if max(mem, sm) >= BUSY_PCT:
            if mem >= sm:
                return "memory-bound", f"{units} of peak: memory >= {BUSY_PCT:g}% and above the SM"
            return "compute-bound", f"{units} of peak: SM side >= {BUSY_PCT:g}% and above memory"
        if k.waves is not None and k.waves < MIN_WAVES:
            return "latency-bound", f"{k.waves:.2f} waves of {k.grid} blocks: SMs idle; {units}"
        theo, lim = k.theoretical_occupancy_pct, k.occupancy_limiter or ""
        if theo is not None and theo <= LOW_OCCUPANCY_PCT and ("registers" in lim or "shared" in lim):
            return "occupancy-limited", (f"theoretical occupancy {theo:.1f}% (limited by {lim}, "
                                         f"{k.registers} registers/thread); no unit >= {BUSY_PCT:g}%: "
                                         f"{units}")
        return "latency-bound", f"no unit >= {BUSY_PCT:g}% at {_v(k.occupancy_pct):.0f}% occupancy: {units}"
    if k.blocks_per_sm is not None and k.blocks_per_sm < MIN_WAVES:
        return "latency-bound", f"{k.grid} blocks, {k.blocks_per_sm:.2f} per SM: SMs idle"
    return None, ""


def idle_fraction(p: Profile) -> float | None:
    """Share of the forward's time the GPU runs no kernel (None without a measured runtime)."""
    if not p.busy_ms or not p.runtime_ms:
        return None
    return max(0.0, 1.0 - p.busy_ms / p.runtime_ms)


def ridge_point(p: Profile) -> float:
    """FLOP per byte where the matmul ceiling meets the bandwidth ceiling (12.2 on the H200)."""
    bw, peak = p.bandwidth_gbs or REFERENCE_BANDWIDTH_GBS, p.peak_tflops or REFERENCE_FP32_TFLOPS
    return peak * 1e3 / bw


def roofline_class(p: Profile) -> tuple[Bottleneck, str]:
    """The forward's class from its FLOPs, minimum bytes and runtime alone."""
    intensity, ridge = (p.flops / p.bytes if p.bytes else 0.0), ridge_point(p)
    if intensity >= ridge:
        return "compute-bound", f"{intensity:.0f} FLOP/byte >= ridge point {ridge:.1f}"
    if p.headroom is not None and p.headroom >= LATENCY_HEADROOM:
        return "latency-bound", (f"{p.headroom:.0f}x over the floor at {intensity:.1f} FLOP/byte: "
                                 "too little work in flight")
    return "memory-bound", f"{intensity:.1f} FLOP/byte < ridge point {ridge:.1f}"


def diagnose(p: Profile) -> Diagnosis:
    """The forward's class: launch-bound when the GPU idles, else the class holding the most GPU
    time (kernels the evidence cannot classify take the forward's roofline class)."""
    idle = idle_fraction(p)
    many = p.kernel_count >= MANY_LAUNCHES
    if idle is not None and (idle >= IDLE_FRACTION_FEW or (idle >= IDLE_FRACTION and many)):
        return Diagnosis("launch-bound", f"GPU idle {idle:.0%} of the forward ({p.runtime_ms:.3f} ms) across "
                         f"{plural(p.kernel_count, 'launch', 'launches')}", {"launch-bound": idle})
    roof, why = roofline_class(p)
    shares: dict[str, float] = {}
    for k in p.kernels:
        shares[k.bottleneck or roof] = shares.get(k.bottleneck or roof, 0.0) + k.share
    if not shares:
        return Diagnosis(roof, why + (" (static estimate)" if p.source == "static" else ""))
    top = max(shares, key=lambda c: shares[c])
    lead = max((k for k in p.kernels if (k.bottleneck or roof) == top), key=lambda k: k.share)
    reason = lead.rationale if lead.bottleneck else f"no per-kernel evidence; forward: {why}"
    return Diagnosis(top, f"{shares[top]:.0%} of GPU time {top}; largest: {label(lead)} ({lead.share:.0%}): "
                     f"{reason}", dict(sorted(shares.items(), key=lambda kv: -kv[1])))


def classify(p: Profile) -> Bottleneck:
    """Overall bottleneck class of a profiled forward."""
    return diagnose(p).bottleneck


# ---- the signature --------------------------------------------------------------------------
def label(k: KernelStat) -> str:
    """A kernel in a few words: its structure, else its bare function name."""
    from ..profiling.ncu import base_name

    return k.structure or base_name(k.name)[:40]


def _times(x: float) -> str:
    return f"{x:.1f}x" if x < 10 else f"{x:.0f}x"


def signature_of(p: Profile) -> str:
    """Three lines: bottleneck and metrics; structure and ops; kernels and launches."""
    if p.source == "gpu" and p.headroom is not None:
        first = f"bottleneck: {p.bottleneck}; {_times(p.headroom)} over speed of light"
        if p.dram_pct is not None and p.sm_pct is not None:
            first += f"; DRAM {p.dram_pct:.0f}% of peak, SM {p.sm_pct:.0f}%"
        if p.occupancy_pct is not None:
            first += f"; occupancy {p.occupancy_pct:.0f}%"
    else:
        first = f"bottleneck: {p.bottleneck} (static estimate)"
        if p.bytes:
            first += f"; {p.flops / p.bytes:.1f} FLOP per byte"
    second = f"structure: {', '.join(p.structures)}; ops: {', '.join(p.op_kinds[:12]) or 'unknown'}"
    third = f"kernels: {plural(p.kernel_count, 'launch', 'launches')} per forward"
    if p.kernels:
        top = max(p.kernels, key=lambda k: k.share)
        third += f"; top kernel {top.share:.0%} of time ({label(top)})"
    if p.launch_gap_us is not None:
        third += f"; host gaps {p.launch_gap_us:.0f} us"
    return "\n".join([first, second, third])
