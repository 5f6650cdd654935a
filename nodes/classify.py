"""Bottleneck classification and the profile signature the skill index embeds.

Pure functions over a Profile, so every threshold is unit-testable on a laptop.
"""

from __future__ import annotations

from ..state.records import Profile

# Op kind -> kernel structure (the vocabulary in state/vocab.py).
STRUCTURE_OF = {
    "linear": "gemm", "matmul": "gemm", "bmm": "gemm",
    "conv": "conv", "conv_transpose": "conv-transpose",
    "sum": "row-reduction", "mean": "row-reduction", "amax": "row-reduction", "amin": "row-reduction",
    "max": "row-reduction", "min": "row-reduction", "argmax": "row-reduction", "argmin": "row-reduction",
    "prod": "row-reduction", "logsumexp": "row-reduction", "var": "row-reduction", "std": "row-reduction",
    "norm": "row-reduction", "softmax": "row-reduction", "log_softmax": "row-reduction",
    "layer_norm": "normalization", "rms_norm": "normalization", "group_norm": "normalization",
    "batch_norm": "normalization", "instance_norm": "normalization", "normalize": "normalization",
    "mse_loss": "loss", "l1_loss": "loss", "smooth_l1_loss": "loss", "huber_loss": "loss",
    "cross_entropy": "loss", "kl_div": "loss", "cosine_similarity": "loss",
    "cumsum": "scan", "cumprod": "scan",
    "max_pool": "pooling", "avg_pool": "pooling", "adaptive_avg_pool": "pooling",
}
POINTWISE_HINT = {"relu", "gelu", "silu", "sigmoid", "tanh", "add", "mul", "sub", "div", "clamp", "exp",
                  "leaky_relu", "elu", "softplus", "mish", "hardswish", "hardsigmoid", "where", "pow"}

# Rationale: cuBLAS/cuDNN fp32 reach ~76% of FFMA peak and streaming kernels ~90% of copy
# bandwidth, so within 1.3x of the floor there is little left for any skill to win.
NEAR_FLOOR = 1.3
# Rationale: an H200 launch costs ~4-6 us of host time; when the mean gap between kernels is
# above ~5 us and kernels are short, the host, not the GPU, sets the pace.
LAUNCH_GAP_US = 5.0
SHORT_KERNEL_US = 20.0
# Rationale: the H200's ridge point for fp32 CUDA-core math is ~67e12 / 4.3e12 ~ 15 FLOP/byte.
RIDGE_FLOP_PER_BYTE = 15.0


def structures_of(op_kinds: list[str]) -> list[str]:
    found: list[str] = []
    for k in op_kinds:
        s = STRUCTURE_OF.get(k) or ("elementwise" if k in POINTWISE_HINT else None)
        if s and s not in found:
            found.append(s)
    if len(op_kinds) >= 6 and "multi-kernel-graph" not in found:
        found.append("multi-kernel-graph")
    return found or ["elementwise"]


def classify(p: Profile) -> str:
    """Overall bottleneck class of a profiled forward."""
    if p.kernels and p.launch_gap_us is not None and p.launch_gap_us > LAUNCH_GAP_US and \
            p.kernel_count >= 4 and (p.runtime_ms or 0) * 1e3 / max(p.kernel_count, 1) < SHORT_KERNEL_US * 2:
        return "launch-bound"
    intensity = p.flops / p.bytes if p.bytes else 0.0
    if intensity > RIDGE_FLOP_PER_BYTE:
        return "compute-bound"
    if p.headroom is not None and p.headroom > 8 and intensity < 1:
        return "latency-bound"
    return "memory-bound"


def signature_of(p: Profile) -> str:
    """Three lines: bottleneck and metrics; structure and ops; kernels and launches."""
    if p.source == "gpu" and p.headroom is not None:
        first = f"bottleneck: {p.bottleneck}; {p.headroom:.1f}x over speed of light"
    else:
        first = f"bottleneck: {p.bottleneck} (static estimate)"
    if p.bytes:
        first += f"; {p.flops / p.bytes:.1f} FLOP per byte"
    second = f"structure: {', '.join(p.structures)}; ops: {', '.join(p.op_kinds[:12]) or 'unknown'}"
    third = f"kernels: {p.kernel_count} launches per forward"
    if p.kernels:
        top = max(p.kernels, key=lambda k: k.share)
        third += f"; top kernel {top.share:.0%} of time ({top.name[:40]})"
    if p.launch_gap_us is not None:
        third += f"; host gaps {p.launch_gap_us:.0f} us"
    return "\n".join([first, second, third])
