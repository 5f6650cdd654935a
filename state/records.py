"""Typed records that flow through the graph: Problem, Candidate, Profile, Plan, Attempt.

A candidate's author state is declared in state/author_state.py.

The evaluator's own result type lives in `eval/types.py` (eval/ must import nothing but the
standard library, torch, triton and numpy); `Attempt` keeps the fields of it the planner needs,
declared there (state/eval_fields.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field, field_validator

from .author_state import AuthorState
from .eval_fields import eval_result_model
from .vocab import Bottleneck, Outcome, Structure


def source_hash(source: str) -> str:
    """Short content hash: identifies a candidate in the attempts log and on disk."""
    return hashlib.sha256(source.encode()).hexdigest()[:12]


class Problem(BaseModel):
    """A KernelBench-format problem: a file defining Model, get_inputs, get_init_inputs."""

    name: str = Field(description="File stem, used in reports and output folder names")
    path: str = Field(description="Where the problem was loaded from")
    source: str = Field(description="The problem file's text, as written")
    size: str = Field(default="full", description="'full' sizes, or 'small' with the SMALL overrides")


class Candidate(BaseModel):
    """One ModelNew source together with where it came from."""

    source: str
    author: str = Field(default="builtin", description="'builtin', 'llm', 'scripted' or 'reference'")
    skill_id: str | None = Field(default=None, description="The skill this candidate applies, if any")
    params: dict[str, Any] = Field(default_factory=dict, description="The skill's parameters")
    note: str = Field(default="", description="One line from the author: what changed and why")
    author_state: AuthorState = Field(
        default_factory=AuthorState, description="What the author needs to derive the next candidate "
                                                 "from this one, and what the graph reads of it")

    @field_validator("author_state", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return AuthorState() if v is None else v  # older records may hold None

    @property
    def hash(self) -> str:
        return source_hash(self.source)


class KernelStat(BaseModel):
    """One kernel in a profiled forward; Nsight Compute fields are None when ncu did not run."""

    name: str
    time_us: float = Field(description="Total GPU time of this kernel per forward")
    share: float = Field(description="Fraction of the forward's GPU time (0..1)")
    launches: int = 1
    structure: Structure | None = None
    dram_pct: float | None = Field(default=None, description="DRAM throughput, % of peak")
    l2_pct: float | None = None
    l1_pct: float | None = None
    sm_pct: float | None = Field(default=None, description="SM (compute) throughput, % of peak")
    tensor_pct: float | None = Field(default=None, description="Tensor-pipe utilisation, % of peak")
    occupancy_pct: float | None = Field(default=None, description="Achieved occupancy, % of max warps")
    occupancy_limiter: str | None = Field(default=None, description="registers, shared-memory, blocks, warps")
    registers: int | None = None
    spills: int | None = Field(default=None, description="Local-memory spill bytes per thread")
    stall_reasons: list[str] = Field(default_factory=list, description="Main warp-stall reasons, worst first")
    bottleneck: Bottleneck | None = None
    # Added by the profiler (issue 6): launch geometry, the rest of Nsight Compute, speed of light.
    kind: str = Field(default="kernel", description="'kernel', 'memset' or 'memcpy'")
    duration_us: float | None = Field(default=None, description="One launch, as Nsight Compute timed it")
    grid: int | None = Field(default=None, description="Blocks per launch")
    block: int | None = Field(default=None, description="Threads per block")
    blocks_per_sm: float | None = Field(default=None, description="Grid blocks / SMs; < 1 leaves SMs idle")
    waves: float | None = Field(default=None, description="Waves of resident blocks per SM (ncu)")
    theoretical_occupancy_pct: float | None = None
    spill_requests: float | None = Field(default=None, description="Local-memory spill requests (ncu)")
    stalls: dict[str, float] = Field(default_factory=dict, description="Stall reason -> warp cycles per "
                                     "issued instruction, worst first")
    top_pipe: str | None = Field(default=None, description="Busiest pipeline per ncu, e.g. FMA, Tensor, ALU")
    top_pipe_pct: float | None = None
    dram_bytes: float | None = Field(default=None, description="DRAM bytes read + written per launch (ncu)")
    flops: float | None = Field(default=None, description="fp32 CUDA-core FLOPs per launch (ncu)")
    bandwidth_pct: float | None = Field(default=None, description="DRAM bytes / duration, % of the measured "
                                        "copy bandwidth")
    flops_pct: float | None = Field(default=None, description="FLOP rate, % of the measured fp32 matmul rate")
    headroom: float | None = Field(default=None, description="Duration over this kernel's own roofline time "
                                   "(its actual DRAM bytes and FLOPs)")
    rationale: str = Field(default="", description="The numbers behind `bottleneck`")
    limiter: Bottleneck | None = Field(default=None, description="What limits this kernel (set for the "
                                       "hottest kernels): memory, compute, latency, occupancy or launch")
    limiter_rationale: str = Field(default="", description="One line: the evidence behind `limiter` and "
                                   "what the kernel achieved against peak")


class Profile(BaseModel):
    """Where a forward's time goes and what limits it; `signature` is what the skill index embeds."""

    source: str = Field(description="'gpu' (measured) or 'static' (from the captured graph, no GPU)")
    bottleneck: Bottleneck
    structures: list[Structure] = Field(default_factory=list, description="Kernel structures present")
    op_kinds: list[str] = Field(default_factory=list, description="Operator names, e.g. conv2d, relu, sum")
    flops: float = 0.0
    bytes: float = Field(default=0.0, description="Minimum bytes moved: inputs, parameters, outputs once")
    floor_ms: float | None = Field(default=None, description="Speed-of-light time (static profiles: on the "
                                   "reference H200's ceilings)")
    runtime_ms: float | None = None
    headroom: float | None = Field(default=None, description="runtime / floor")
    kernel_count: int = Field(default=0, description="Kernel launches per forward")
    launch_gap_us: float | None = Field(default=None, description="Mean idle gap between launches")
    kernels: list[KernelStat] = Field(default_factory=list)
    signature: str = Field(default="", description="Compact text: bottleneck, metrics, structure, ops")
    # Added by the profiler (issue 6).
    subject: str | None = Field(default=None, description="Source hash of the profiled candidate; None: "
                                "the reference")
    gpu: str | None = None
    precision_policy: str = "strict-fp32"
    bandwidth_gbs: float | None = Field(default=None, description="Ceiling behind floor_ms: measured copy "
                                        "bandwidth (read + write)")
    peak_tflops: float | None = Field(default=None, description="Ceiling behind floor_ms: measured fp32 "
                                      "matmul rate")
    busy_ms: float | None = Field(default=None, description="GPU time of all launches in one forward")
    achieved_gbs: float | None = Field(default=None, description="Minimum bytes / runtime")
    achieved_tflops: float | None = Field(default=None, description="FLOPs / runtime")
    dram_pct: float | None = Field(default=None, description="DRAM % of peak, time-weighted over ncu kernels")
    sm_pct: float | None = Field(default=None, description="SM % of peak, time-weighted over ncu kernels")
    occupancy_pct: float | None = Field(default=None, description="Achieved occupancy, time-weighted (ncu)")
    bottleneck_shares: dict[str, float] = Field(default_factory=dict, description="Share of GPU time per "
                                                "kernel class")
    rationale: str = Field(default="", description="The numbers behind `bottleneck`")
    ncu_status: str | None = Field(default=None, description="Nsight Compute: 'ok: ...' or why not run")
    limiter: Bottleneck | None = Field(default=None, description="The target kernel's limiter: the hottest "
                                       "kernel's unless it runs near a unit's peak (nodes/limiter.py); None: "
                                       "no kernels, e.g. a static profile; `bottleneck` is the forward's")
    limiter_rationale: str = Field(default="", description="The target kernel's name and its limiter's "
                                   "evidence")
    target_kernel: str | None = Field(default=None, description="The target kernel's bare function name "
                                      "(nodes/limiter.py), which the planner asks the author whether a "
                                      "skill changes; None: no kernels, or an older record")
    notes: list[str] = Field(default_factory=list, description="Caveats a reader of the numbers needs")
    seconds: dict[str, float] = Field(default_factory=dict, description="What this profile cost: 'wall' "
                                      "(the parent's wait, child start included) and the profiling "
                                      "child's stages (load, timeline, timing, work, ncu); {}: no child ran")


class Plan(BaseModel):
    """The planner's choice: exactly one skill to apply next, with the variants (parameter sets) of
    it this round tries; `params` is the first of them."""

    skill_id: str
    params: dict[str, Any] = Field(default_factory=dict)
    reason: str = Field(default="", description="Why this skill, in words the log can show")
    variants: list[dict[str, Any]] = Field(default_factory=list, description="Parameter sets this round "
                                           "tries, one candidate each, best first ([]: `params` alone)")
    round: int | None = Field(default=None, description="The round this plan starts")
    move: str = Field(default="ranked", description="Where the move came from: 'ranked' (the skill index "
                      "for this profile), 'variant' (untried variants of an applied skill), 'template' "
                      "(any template the author can apply)")
    best_ms: float | None = Field(default=None, description="The best candidate's runtime when planned")

    def all_variants(self) -> list[dict[str, Any]]:
        """The parameter sets to build: `variants`, or `params` alone."""
        return [dict(v) for v in self.variants] or [dict(self.params)]


class _Tried(BaseModel):
    """What an attempt tried: the head of the Attempt record."""

    round: int
    node: str = Field(description="generator, repairer, ...: which agent produced the candidate")
    skill_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    source_hash: str
    outcome: Outcome


# The evaluator's fields an attempt keeps (types and defaults: eval.types.EvalResult). `stage`
# defaults to "" (no evaluation); an author that produced nothing logs stage "author".
ATTEMPT_FIELDS = ("stage", "failed_checks", "runtime_ms", "eager_ms", "compile_ms", "speedup_vs_eager",
                  "speedup_vs_compile", "stage_seconds")


class Attempt(eval_result_model("_Judged", ATTEMPT_FIELDS, base=_Tried, stage="")):
    """One finished step in short-term memory: what was tried and what happened (the ATTEMPT_FIELDS
    of its verdict; speedups None under CPU timing)."""

    error: str | None = Field(default=None, description="Excerpt of the error, one line or a few")
    profile_signature: str | None = None
    tokens: int | None = Field(default=None, description="LLM tokens spent on this attempt, if any")
    note: str = ""
    repeat_of: int | None = Field(default=None, description="Index in the attempts log of the earlier "
                                  "evaluation of the same source (not evaluated again)")
    eval_s: float | None = Field(default=None, description="Wall seconds of this attempt's evaluation "
                                 "(None: not evaluated, e.g. a repeat)")

    def key(self) -> tuple[str | None, str]:
        """(skill, parameters) identity the planner uses to avoid re-trying a dead end."""
        return self.skill_id, repr(sorted(self.params.items()))

    @property
    def judged(self) -> bool:
        """Whether the evaluator judged this source here: not a repeat of an earlier evaluation,
        and past the author's own stage (a variant the author could not build was never judged)."""
        return self.repeat_of is None and self.stage not in ("", "author")
