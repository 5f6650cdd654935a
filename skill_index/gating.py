"""Hard preconditions: a skill whose gate fails never reaches the planner, whatever its score.

Policy gates (TF32, training mode) always apply: they come from the run, not from the profile.
Profile gates apply only to facts the query actually knows; an unknown fact passes, because a
missing metric (CPU run, free-text query) is no evidence that the skill does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .facts import QueryFacts
from .schema import Skill


@dataclass(frozen=True)
class Policy:
    """The run's rules: may matmul-class work use TF32 (the `tf32` precision policy; `default` and
    `strict` keep matmuls IEEE fp32), and does the model run in training mode."""

    allow_tf32: bool = False
    training: bool = True


def gate(skill: Skill, facts: QueryFacts, policy: Policy) -> str | None:
    """None when the skill may be used; otherwise one line saying which precondition failed."""
    pre = skill.preconditions
    if pre.needs_tf32_policy and not policy.allow_tf32:
        return "needs the tf32 precision policy (this run keeps matmuls fp32)"
    if pre.strict_fp32_only and policy.allow_tf32:
        return "applies only while matmuls stay fp32 (default and strict policies)"
    if pre.inference_only and policy.training:
        return "inference only (model runs in training mode)"
    if pre.training_only and not policy.training:
        return "applies only in training mode"
    if pre.structures_any and facts.structures and not set(pre.structures_any) & set(facts.structures):
        return f"needs structure {' or '.join(pre.structures_any)}"
    if pre.bottlenecks_any and facts.bottleneck and facts.bottleneck not in pre.bottlenecks_any:
        return f"needs bottleneck {' or '.join(pre.bottlenecks_any)}"
    if pre.ops_any and facts.ops and not any(want.lower() in op for want in pre.ops_any for op in facts.ops):
        return f"needs an op like {' or '.join(pre.ops_any)}"
    if pre.min_kernel_count and facts.kernel_count is not None and facts.kernel_count < pre.min_kernel_count:
        return f"needs >= {pre.min_kernel_count} launches (profile has {facts.kernel_count})"
    if pre.min_headroom and facts.headroom is not None and facts.headroom < pre.min_headroom:
        return f"needs >= {pre.min_headroom}x headroom over speed of light (profile has {facts.headroom}x)"
    return None
