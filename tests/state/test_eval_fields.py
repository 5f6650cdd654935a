"""Verdict and Attempt take the evaluator's fields from eval.types.EvalResult, and keep the shape
checkpoints and report.json were written with (threads started before still resume)."""

from __future__ import annotations

import dataclasses

import pytest
from kernelskill.eval.types import EvalResult
from kernelskill.graph.threads import serializer
from kernelskill.state.eval_fields import eval_result_model
from kernelskill.state.graph_state import Verdict
from kernelskill.state.records import Attempt

# The keys a checkpointed Verdict and Attempt hold, in order, as written before the fields were
# derived from EvalResult (Attempt's `error` then sat after `stage`; keys are read by name).
VERDICT_KEYS = ["correct", "stage", "reason", "failed_checks", "usage_error", "runtime_ms", "eager_ms",
                "compile_ms", "speedup_vs_eager", "speedup_vs_compile", "floor_ms", "noise", "custom_kernels",
                "kernel_names", "timing_is_cpu", "gpu_name", "flops", "bytes", "kernel_breakdown", "log_tail",
                "precision_policy", "precision_flags",
                "baselines_in",  # added later, default None: older checkpoints load unchanged
                "conv_flops",  # added later, default None: older checkpoints load unchanged
                "stage_seconds",  # added later, default {}: older checkpoints load unchanged
                "timed_runs",  # added later, default None: older checkpoints load unchanged
                "baselines_reused",
                "timing_mode"]  # added later, default "full": older checkpoints load unchanged
ATTEMPT_KEYS = ["round", "node", "skill_id", "params", "source_hash", "outcome", "stage", "failed_checks",
                "runtime_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile",
                "stage_seconds",  # added later, default {}: older checkpoints load unchanged
                "error",
                "profile_signature", "tokens", "note", "repeat_of",
                "eval_s"]  # added last, default None: older checkpoints load unchanged


def test_the_records_keep_their_keys_and_required_fields() -> None:
    assert list(Verdict(correct=True, stage="done").model_dump()) == VERDICT_KEYS
    assert list(Attempt(round=0, node="generator", source_hash="abc", outcome="correct").model_dump()) \
        == ATTEMPT_KEYS
    assert Attempt(round=0, node="generator", source_hash="abc", outcome="correct").stage == ""
    with pytest.raises(ValueError, match="correct"):
        Verdict(stage="done")


def test_a_verdict_carries_every_kept_evaluator_field() -> None:
    result = EvalResult(correct=True, stage="done", runtime_ms=0.5, eager_ms=1.0, noise=0.03,
                        kernel_names=["k"], precision_flags={"tf32": False}, pass_rule="tolerance")
    v = Verdict.of(result)
    for name in Verdict.model_fields.keys() - {"baselines_reused", "timing_mode"}:
        assert getattr(v, name) == getattr(result, name), name
    # A field the evaluator's dataclass has but the verdict does not keep stays out of state.
    assert "pass_rule" not in v.model_dump()
    defaults = {f.name: f for f in dataclasses.fields(EvalResult)}
    assert Verdict(correct=True, stage="done").floor_ms is defaults["floor_ms"].default


def test_the_checkpoint_serializer_rebuilds_both_records() -> None:
    ser = serializer()
    v = Verdict(correct=False, stage="compile", reason="boom", failed_checks=["crash"], baselines_reused=True)
    a = Attempt(round=2, node="repairer", source_hash="abc", outcome="compile-error", stage="compile",
                error="boom", failed_checks=["crash"])
    for record in (v, a):
        back = ser.loads_typed(ser.dumps_typed(record))
        assert type(back) is type(record) and back == record


def test_a_name_the_evaluator_does_not_declare_is_refused() -> None:
    with pytest.raises(ValueError, match="runtime_us"):
        eval_result_model("Bad", ("correct", "runtime_us"))
    with pytest.raises(ValueError, match="stage"):
        eval_result_model("Bad", ("correct",), stage="")
