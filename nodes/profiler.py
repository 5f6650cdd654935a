"""Profiler: where the best candidate's time goes, as a typed Profile and a text signature.

On a GPU the reviewer's evaluation already carries a torch.profiler kernel breakdown of one
candidate call, so profiling costs no extra run; without a GPU a static profile is built from
the captured graph (op kinds, structures, FLOPs and minimum bytes), so the graph still plans.
"""

from __future__ import annotations

from typing import Any

from ..state.graph_state import GraphState, Verdict
from ..state.records import KernelStat, Profile
from .classify import classify, signature_of, structures_of


def op_kinds_of(source: str, path: str) -> list[str]:
    """Canonical op kinds of the reference forward (empty when it cannot be captured)."""
    from ..authors.builtin.capture import CaptureError, capture

    try:
        program = capture(source, path or "<problem>", "small").program
    except CaptureError:
        return []
    skip = {"getattr", "getitem", "size", "dim", "view", "reshape", "contiguous", "flatten", "permute",
            "transpose", "unsqueeze", "squeeze", "expand", "identity"}
    kinds: list[str] = []
    for op in program.ops:
        if op.kind not in skip and op.kind not in kinds:
            kinds.append(op.kind)
    return kinds


def build_profile(verdict: Verdict, op_kinds: list[str]) -> Profile:
    kernels: list[KernelStat] = []
    total = sum(k["time_us"] for k in verdict.kernel_breakdown) or 0.0
    for k in verdict.kernel_breakdown:
        kernels.append(KernelStat(name=k["name"][:160], time_us=k["time_us"],
                                  share=k["time_us"] / total if total else 0.0, launches=k["launches"]))
    structures = structures_of(op_kinds)
    launches = sum(k.launches for k in kernels)
    profile = Profile(source="gpu" if kernels else "static", bottleneck="memory-bound",
                      structures=structures, op_kinds=op_kinds, flops=verdict.flops or 0.0,
                      bytes=verdict.bytes or 0.0, floor_ms=verdict.floor_ms, runtime_ms=verdict.runtime_ms,
                      kernel_count=launches or max(1, len(op_kinds)), kernels=kernels)
    if profile.floor_ms and profile.runtime_ms:
        profile.headroom = profile.runtime_ms / profile.floor_ms
    if total and profile.runtime_ms and launches > 1:
        profile.launch_gap_us = max(0.0, profile.runtime_ms * 1e3 - total) / (launches - 1)
    profile.bottleneck = classify(profile)
    profile.signature = signature_of(profile)
    return profile


def profiler(state: GraphState) -> dict[str, Any]:
    verdict = state.best_verdict or state.verdict
    assert verdict is not None, "profiler runs after a correct evaluation"
    profile = build_profile(verdict, op_kinds_of(state.problem.source, state.problem.path))
    return {"profile": profile}
