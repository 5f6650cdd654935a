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
# Rationale: a kernel at 89% of its busiest unit's peak (a vendor convolution on the tensor pipe,
# 30% of a ResNet block's GPU time) can get at most 1.12x faster, and the round that rewrote it ran
# 2x slower, while a 19% batch-norm statistics kernel at 58% of DRAM had twice the time to give
# back (H100, 2026-12-06, problems/measurements/h100-2026-12-06-level3/). Below this the hottest
# kernel stays the target: near-ties between kernels far from peak are noise, not evidence.
NEAR_PEAK = 0.80
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


def used(k: KernelStat) -> tuple[float, str]:
    """(fraction, unit): the kernel's busiest unit against its peak, from ncu's DRAM, SM and
    tensor-pipe percentages; (0.0, '') without counters (no evidence it is near any peak)."""
    units = [(v / 100.0, name) for v, name in ((k.dram_pct, "DRAM"), (k.sm_pct, "SM"),
                                               (k.tensor_pct, "tensor-pipe")) if v is not None]
    return max(units, default=(0.0, ""))


def spare_share(k: KernelStat) -> float:
    """The share of GPU time the kernel could give back at its busiest unit's peak (Amdahl's bound
    on what any rewrite of it alone gains): share x (1 - used)."""
    return k.share * (1.0 - min(used(k)[0], 1.0))


def target_kernel(hot: list[KernelStat]) -> KernelStat:
    """The hottest kernel, unless it already runs at NEAR_PEAK of its busiest unit: then the hot
    kernel with the most time to give back (`spare_share`)."""
    if used(hot[0])[0] < NEAR_PEAK:
        return hot[0]
    return max(hot, key=spare_share)  # the first of equals: the hottest on ties


def _label(k: KernelStat) -> str:
    name = base_name(k.name)[:60] if k.kind == "kernel" else k.name
    return f"{name} ({k.share:.0%} of GPU time)"


def set_limiters(p: Profile) -> None:
    """Give each hot kernel its limiter, and the profile the limiter and the bare name
    (`Profile.target_kernel`) of the hot kernel with the most time to give back (`target_kernel`:
    the hottest unless that one already runs near its peak); None without kernels."""
    hot = hot_kernels(p.kernels)
    if not hot:
        p.limiter, p.limiter_rationale, p.target_kernel = None, "", None
        return
    roofline = C.roofline_class(p)
    for k in hot:
        k.limiter, k.limiter_rationale = limiter_of(k, roofline)
    target, top = target_kernel(hot), hot[0]
    p.limiter = target.limiter
    p.target_kernel = base_name(target.name) if target.kind == "kernel" else target.name
    p.limiter_rationale = f"{_label(target)}: {target.limiter_rationale}"
    if target is not top:
        frac, unit = used(top)
        p.limiter_rationale += (f"; the hottest, {_label(top)}, already runs at {frac:.0%} of its {unit} "
                                f"peak ({spare_share(top):.0%} of the time to give back, against "
                                f"{spare_share(target):.0%} here)")
