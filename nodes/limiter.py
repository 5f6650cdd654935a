"""What limits each of a forward's hottest kernels, and what it achieved against peak.

Pure functions over the profile's records. A limiter is one of state/vocab.py's Bottleneck words
(memory-bound, compute-bound, latency-bound, occupancy-limited, launch-bound), so a skill that
declares the bottleneck it addresses matches a limiter without a second vocabulary. The verdict
from counters or launch geometry is classify.classify_kernel's; on top of it a kernel whose
launches are too short to amortise a launch is launch-bound, and a hot kernel with no evidence
of its own takes the forward's roofline class, saying so.
"""

from __future__ import annotations

from ..profiling.ncu import base_name
from ..state.records import KernelStat, Profile
from ..state.vocab import Bottleneck
from . import classify as C

# Rationale: a kernel under 10% of the GPU time cannot make the forward more than ~1.1x faster
# however fast it gets; on the H200 fixtures the top 1-3 kernel names hold 88-100% of a forward.
HOT_SHARE, HOT_MAX = 0.10, 3
# Structures that do O(1) arithmetic per byte: with no evidence of their own they stream memory
# (on the fixtures every such kernel with counters was memory- or latency-bound, none compute-bound).
STREAMING = {"elementwise", "row-reduction", "column-reduction", "normalization", "pooling", "scan", "loss"}


def hot_kernels(kernels: list[KernelStat]) -> list[KernelStat]:
    """The hottest kernels by share of GPU time: the first always, then up to HOT_MAX in all
    with at least HOT_SHARE each."""
    ranked = sorted(kernels, key=lambda k: -k.share)
    return [k for i, k in enumerate(ranked[:HOT_MAX]) if i == 0 or k.share >= HOT_SHARE]


def has_counters(k: KernelStat) -> bool:
    """Whether Nsight Compute measured this kernel (ncu profiles kernels, never copies or memsets)."""
    return k.dram_pct is not None or k.sm_pct is not None


def achieved(k: KernelStat) -> str:
    """What the kernel reached against peak ('achieved ...', or 'no counters'): its DRAM bytes and
    FLOPs over its duration against the measured ceilings (bandwidth_pct, flops_pct), else ncu's
    percentages of the hardware peak."""
    parts = []
    if k.bandwidth_pct is not None:
        parts.append(f"DRAM {k.bandwidth_pct:.0f}% of the measured bandwidth")
    if k.flops_pct is not None:
        parts.append(f"fp32 {k.flops_pct:.0f}% of the measured FLOP rate")
    if not parts and has_counters(k):
        parts.append(f"DRAM {k.dram_pct or 0:.0f}%, SM {k.sm_pct or 0:.0f}% of peak")
    return "achieved " + ", ".join(parts) if parts else "no counters"


def limiter_of(k: KernelStat, roofline: tuple[Bottleneck, str]) -> tuple[Bottleneck, str]:
    """(limiter, one-line rationale) of one kernel; `roofline` is the forward's class and its
    reason (classify.roofline_class), used only where the kernel has no evidence of its own."""
    per_launch = k.duration_us or k.time_us / max(k.launches, 1)
    got = achieved(k)
    if per_launch < C.TINY_KERNEL_US:
        return "launch-bound", (f"{per_launch:.1f} us per launch x {k.launches} (< {C.TINY_KERNEL_US:g} us): "
                                f"the launch's fixed cost dominates; {got}")
    verdict, why = (k.bottleneck, k.rationale) if k.bottleneck else C.classify_kernel(k)
    if verdict is not None:
        return verdict, f"{why}; {got}"
    if k.structure in STREAMING:
        return "memory-bound", f"no counters: {k.structure} kernels stream their data (O(1) FLOP per byte)"
    return roofline[0], f"no counters: the forward's roofline class ({roofline[1]})"


def set_limiters(p: Profile) -> None:
    """Give each hot kernel its limiter, and the profile the hottest kernel's (None without kernels)."""
    hot = hot_kernels(p.kernels)
    if not hot:
        p.limiter, p.limiter_rationale = None, ""
        return
    roofline = C.roofline_class(p)
    for k in hot:
        k.limiter, k.limiter_rationale = limiter_of(k, roofline)
    top = hot[0]
    name = base_name(top.name)[:60] if top.kind == "kernel" else top.name
    p.limiter = top.limiter
    p.limiter_rationale = f"{name} ({top.share:.0%} of GPU time): {top.limiter_rationale}"
