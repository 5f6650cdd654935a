"""The graph state: what every node reads and returns a partial update of.

Short-term memory IS `attempts`, an append-only log (LangGraph reducer `operator.add`) that is
checkpointed after every node, so a resumed thread sees the whole history.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from .eval_fields import eval_result_model
from .records import Attempt, Candidate, Plan, Problem, Profile

# The evaluator's fields a verdict keeps, in this order (types and defaults: eval.types.EvalResult).
VERDICT_FIELDS = ("correct", "stage", "reason", "failed_checks", "usage_error", "runtime_ms", "eager_ms",
                  "compile_ms", "speedup_vs_eager", "speedup_vs_compile", "floor_ms", "noise",
                  "custom_kernels", "kernel_names", "timing_is_cpu", "gpu_name", "flops", "bytes",
                  "kernel_breakdown", "log_tail", "precision_policy", "precision_flags", "baselines_in",
                  "conv_flops", "stage_seconds", "timed_runs")


class Verdict(eval_result_model("EvalVerdict", VERDICT_FIELDS, correct=..., stage=...)):
    """The evaluator's result as the graph keeps it: the EvalResult fields VERDICT_FIELDS names
    (`correct` and `stage` required), plus whether the baselines were reused."""

    baselines_reused: bool = False
    """Eager / torch.compile times copied from an earlier run of the same problem (to rank
    candidates without re-timing the baselines); finalize re-times the best so that the
    reported speedups are ratios from one run."""
    timing_mode: str = "full"
    """The evaluation's timing protocol (EvalOptions.timing_mode): 'rank' timed just enough to rank
    an intermediate candidate; finalize re-times a delivered one in 'full' on a GPU."""
    tuning: dict[str, str] = Field(default_factory=dict, exclude=True)
    """The candidate's autotuning records (EvalResult.tuning), on their way into GraphState.tuning;
    not kept with the verdict itself."""

    @classmethod
    def of(cls, result: Any) -> Verdict:
        data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})


class RunSettings(BaseModel):
    """The knobs a run was started with (kept in state so a resumed thread runs the same way)."""

    device: str = "cuda"
    size: str = "full"
    author: str = "builtin"
    model: str | None = None
    base_url: str | None = None
    rounds: int = 6
    repairs: int = 3
    wall_clock_s: float = 1800.0
    trials: int = 5
    eval_timeout_s: float = 600.0
    precision: str = "default"
    """Precision policy (eval/precision.py): default, strict or tf32."""
    baselines: bool = True
    min_gain: float = 1.02
    variants: int = 4
    """Variants of the chosen skill a round builds and judges at most (one candidate each)."""
    parallel_judges: int = 1
    """On a GPU, a round's candidates judged side by side at most (eval/batch.py); 1: one after another."""
    profile_budget_s: float = 25.0
    script: list[str] = Field(default_factory=list)
    """Candidate sources the 'scripted' author replays (tests, demos)."""
    out: str | None = None
    """Absolute output folder of a command-line run (None: runs/<problem>); a resume writes there."""
    config: str | None = None
    """Absolute path of the configuration file the run was started with, reloaded on resume."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_tf32(cls, data: Any) -> Any:
        """Threads checkpointed before the three policies stored `allow_tf32`."""
        if isinstance(data, dict) and data.get("allow_tf32") and "precision" not in data:
            data = {**data, "precision": "tf32"}
        return data


class Pruning(BaseModel):
    """What finalize did to the delivered file: pruned to the Triton kernels its verified run
    launched (nodes/pruning.py), or why not."""

    of_hash: str = Field(description="The best candidate's source hash this pruning belongs to")
    applied: bool = Field(False, description="The pruned file passed the evaluator and is delivered")
    note: str = ""
    source: str | None = Field(None, description="The pruned file, when applied")
    verified_for: str = Field("", description="Problem, size constants and device the kernels ran at")
    kernels: list[str] = Field(default_factory=list, description="Triton kernels the verified run launched")
    removed: list[str] = Field(default_factory=list, description="Top-level names pruned away")
    raises: int = Field(0, description="Host paths replaced by a RuntimeError naming the verified shapes")
    lines_before: int = 0
    lines_after: int | None = None
    bytes_before: int = 0
    bytes_after: int | None = None


def _given(obj: Any, field: str) -> Any:
    """`field` as the caller gave it (a dict's key, a model's explicitly set field), else None."""
    if isinstance(obj, dict):
        return obj.get(field)
    return getattr(obj, field) if isinstance(obj, BaseModel) and field in obj.model_fields_set else None


def _with(obj: Any, size: str) -> Any:
    return {**obj, "size": size} if isinstance(obj, dict) else obj.model_copy(update={"size": size})


class GraphState(BaseModel):
    problem: Problem
    settings: RunSettings = Field(default_factory=RunSettings)
    round: int = 0
    candidate: Candidate | None = None
    """The candidate under review (or being repaired)."""
    candidates: list[Candidate] = Field(default_factory=list)
    """A round's variants awaiting review together ([]: `candidate` alone); the reviewer clears it."""
    baselines: list[float | None] | None = None
    """[eager_ms, compile_ms] as this thread's first timed evaluation measured them: later
    evaluations reuse them (EvalOptions.known_baselines) instead of timing the reference again."""
    tuning: dict[str, str] = Field(default_factory=dict)
    """Autotuning records of this thread's correct candidates (EvalResult.tuning): its later 'rank'
    evaluations start with them (EvalOptions.tuning) instead of re-tuning shared kernels."""
    node: str = "generator"
    """Which node produced `candidate`: generator or repairer."""
    verdict: Verdict | None = None
    best: Candidate | None = None
    best_verdict: Verdict | None = None
    profile: Profile | None = None
    plan: Plan | None = None
    repairs: int = 0
    """Repairs spent on the current candidate's lineage."""
    started_at: float = 0.0
    elapsed_s: float = 0.0
    stop_reason: str | None = None
    reference_verdict: Verdict | None = None
    """When the delivered solution is the reference itself: its own evaluation (finalize, GPU), so
    the reported speedup of what the user gets is measured, never assumed to be 1.0."""
    pruning: Pruning | None = None
    """Finalize's pruning of the best candidate; its source is delivered when `applied`."""
    attempts: Annotated[list[Attempt], operator.add] = Field(default_factory=list)
    plans: Annotated[list[Plan], operator.add] = Field(default_factory=list)
    """Every plan the planner made, in order: the round-by-round record report.json derives."""

    @model_validator(mode="before")
    @classmethod
    def _one_size(cls, data: Any) -> Any:
        """The size is given once, in settings; problem.size mirrors it (the authors read it there).
        An input that gives it in both (the served graph's older form) is accepted when they agree."""
        if not isinstance(data, dict) or data.get("problem") is None:
            return data
        problem, settings = data["problem"], data.get("settings")
        in_problem, in_settings = _given(problem, "size"), _given(settings, "size")
        if in_problem is not None and in_settings is not None and in_problem != in_settings:
            raise ValueError(f"problem.size {in_problem!r} disagrees with settings.size {in_settings!r}: "
                             "give the size once, in settings")
        size = in_settings or in_problem or RunSettings.model_fields["size"].default
        return {**data, "problem": _with(problem, size), "settings": _with(settings or {}, size)}

    def failed_keys(self) -> set[tuple[str | None, str]]:
        """(skill, params) pairs that already failed on this task: never re-applied."""
        return {a.key() for a in self.attempts if a.skill_id and a.outcome != "correct"}
