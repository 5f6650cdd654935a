"""Correctness holes (threat class 5): perturbing every input at once pushed a sqrt out of its
domain and skipped every perturbed trial, one NaN anywhere skipped a whole trial, an output over an
input's memory at an offset was not seen as aliasing it, and a fixed absolute tolerance passed
bf16 arithmetic on small outputs. Each test checks what the judge did (which trials ran, which
elements were left out, which rule or message), not only the verdict. The evaluations run on the
CPU, or on the GPU under KS_ATTACK_DEVICE=cuda (attack_device.py)."""

from __future__ import annotations

import math

import pytest
import torch
from attack_device import DEVICE, cpu_only, needs_device
from kernelskill.eval import harness as H
from kernelskill.eval.api import _run_worker, evaluate
from kernelskill.eval.candidate.contract import describe, mismatch
from kernelskill.eval.judge.compare import comparable, compare
from kernelskill.eval.types import EvalOptions, EvalResult

OPTS = EvalOptions(device=DEVICE, size="small", trials=2, timeout_s=120, baselines=False, timing=False)
pytestmark = needs_device
HEAD = "import torch\nimport torch.nn as nn\n"


def problem(forward: str, inputs: str, args: str = "x") -> str:
    body = "\n".join("        " + ln for ln in forward.strip("\n").splitlines())
    return (f"{HEAD}\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
            f"    def forward(self, {args}):\n{body}\n\n\ndef get_inputs():\n    return {inputs}\n\n\n"
            "def get_init_inputs():\n    return []\n")


def cand(forward: str, args: str = "x") -> str:
    return problem(forward, "[]", args).replace("class Model(", "class ModelNew(")


def evaluated(prob: str, source: str) -> EvalResult:
    return evaluate(prob, source, OPTS, problem_name="p.py", candidate_name="c.py")


def judged(prob: str, source: str) -> EvalResult:
    """The judge without the static checks in front of it (they refuse some of these tricks on
    their own; the point here is the judge's check behind them)."""
    return _run_worker(prob, source, OPTS, "p.py", "c.py", EvalResult(device=DEVICE))


def accepted(r: EvalResult) -> None:
    assert r.correct and r.stage == "done", (r.stage, r.failed_checks, r.reason, r.log_tail[-600:])


def rejected(r: EvalResult, check: str, *texts: str) -> None:
    assert not r.correct and r.stage == "correctness", (r.stage, r.reason)
    assert check in r.failed_checks, (r.failed_checks, r.reason)
    for text in texts:
        assert text in (r.reason or ""), r.reason


def left_out(r: EvalResult) -> str:
    """The judge's report of elements and trials left out (its log, carried in the result)."""
    return next((ln for ln in r.log_tail.splitlines() if ln.startswith("correctness: ")), "")


# ---- one input at a time --------------------------------------------------------------------
SQRT = problem("return torch.relu(x) + torch.sqrt(y)",
               "[torch.rand(16, 24), torch.rand(16, 24)]", "x, y")


def test_a_dropped_relu_is_caught_where_another_input_bounds_the_domain() -> None:
    # Plain inputs are non-negative, so only a perturbed x shows the missing ReLU; perturbing y as
    # well (all inputs at once) made sqrt NaN somewhere in every perturbed trial, skipping them all.
    r = evaluated(SQRT, cand("return x + torch.sqrt(y)", "x, y"))
    rejected(r, "wrong_output", "perturbed", "(input 0)")


def test_every_perturbed_trial_of_an_honest_candidate_runs() -> None:
    r = evaluated(SQRT, cand("return torch.relu(x) + torch.sqrt(y)", "x, y"))
    accepted(r)
    # Three kinds on each of the two inputs; y's put NaN in part of the reference, left out.
    assert r.trials_run == 2 and r.perturbed_trials == 6, (r.trials_run, r.perturbed_trials)
    report = left_out(r)
    assert report.endswith("everywhere: none"), report
    assert int(report.split()[1]) > 0, report


def test_the_plan_covers_every_input_and_stays_bounded() -> None:
    kinds = set(H.PERTURBATIONS)
    for n in (1, 2, 3):  # KernelBench's problems: every (kind, input) pair
        plan = H.perturbation_plan(list(range(n)))
        assert sorted(plan) == sorted((k, i) for k in kinds for i in range(n))
    for n in (4, 7, 20):
        plan = H.perturbation_plan(list(range(n)))
        assert len(plan) == max(H.MAX_PERTURBED, n) and {i for _, i in plan} == set(range(n))
        assert len(set(plan)) == len(plan)
    assert H.perturbation_plan([]) == []


def test_a_perturbed_input_leaves_the_others_as_get_inputs_gives_them() -> None:
    from kernelskill.eval.problem import load_problem
    prob = load_problem(SQRT, "small", "p.py")
    plain = H.make_inputs(prob, 7, DEVICE)
    x, y = H.make_inputs(prob, 7, DEVICE, H.PERTURBATIONS["affine(x*4-2)"], 1)
    assert torch.equal(x, plain[0]) and torch.equal(y, plain[1] * 4 - 2)
    assert H.float_inputs([plain[0], 3, torch.arange(4), torch.empty(0), plain[1]]) == [0, 4]


# ---- NaN in one element leaves out that element, not the trial ----------------------------------
ONE_NAN = problem("y = x * 2.0\ny[0, 0] = torch.sqrt(x.min())\nreturn y", "[torch.rand(12, 32)]")


def test_a_nan_in_one_reference_element_does_not_skip_the_trial() -> None:
    # Every perturbation makes x.min() negative: the reference is NaN at [0, 0] and nowhere else.
    wrong = cand("y = x.abs() * 2.0\ny[0, 0] = torch.sqrt(x.min())\nreturn y")
    rejected(evaluated(ONE_NAN, wrong), "wrong_output", "perturbed")
    r = evaluated(ONE_NAN, cand("y = x * 2.0\ny[0, 0] = torch.sqrt(x.min())\nreturn y"))
    accepted(r)
    assert r.perturbed_trials == 3
    assert left_out(r).startswith("correctness: 3 output elements"), left_out(r)  # one per trial


def test_only_the_non_finite_elements_are_left_out() -> None:
    r64 = torch.linspace(-2, 2, 30, dtype=torch.float64).reshape(5, 6)
    r64[1, 2] = math.nan
    r32 = r64.float()
    r32[4, 5] = math.inf  # fp32's range: PyTorch's own result overflows there
    good = r64.float()
    for chunk in (1, 4, 64):
        v = compare(good, r64, r32, chunk=chunk, skip_nonfinite=True)
        assert v.ok and v.masked == 2, (chunk, v)
        wrong = good.clone()
        wrong[3, 1] += 0.1
        v = compare(wrong, r64, r32, chunk=chunk, skip_nonfinite=True)
        assert not v.ok and "at (3, 1)" in v.reason, (chunk, v)
        nan_out = good.clone()
        nan_out[0, 0] = math.nan  # the reference is finite there: still a failure
        v = compare(nan_out, r64, r32, chunk=chunk, skip_nonfinite=True)
        assert not v.ok and "1 NaN/Inf" in v.reason, (chunk, v)
    # Plain trials still ask for the reference's non-finite values to be reproduced.
    assert not compare(torch.where(r64.isnan(), 0.0, r64).float(), r64, r64.float()).ok
    assert comparable(r64, r32, chunk=4) == (28, 30)
    assert comparable(torch.full((3,), math.nan, dtype=torch.float64), torch.zeros(3)) == (0, 3)


ALL_NAN = problem("return torch.sqrt(x.min()) + 0.0 * x", "[torch.rand(8, 8)]")


def test_a_trial_with_no_finite_reference_is_skipped_and_reported() -> None:
    r = judged(ALL_NAN, cand("return torch.sqrt(x.min()) + 0.0 * x"))
    accepted(r)
    assert r.trials_run == 2 and r.perturbed_trials == 0
    report = left_out(r)
    assert all(f"perturbed {k} (input 0)" in report for k in H.PERTURBATIONS), report


# ---- aliasing by memory range --------------------------------------------------------------------
def test_an_offset_view_of_an_inputs_memory_aliases_it() -> None:
    x = torch.randn(5, 4).share_memory_()
    other = torch.randn(5, 4)
    views = [x[1:], x.view(-1)[3:7], x.as_strided((2, 2), (1, 4), 5), torch.from_numpy(x.numpy()[1:]),
             torch.empty(0).set_(x.untyped_storage()[16:], 0, (4,), (1,)), x.t()]
    for v in views:
        assert describe(v, [other, 2, x])["alias"], v
    for v in (x.clone()[1:], torch.randn(4), x[:0], other.new_empty(0)):
        assert not describe(v, [other, 2, x])["alias"], v
    got, want = describe(x[1:], [x]), describe(x[1:] * 1.0, [x])
    assert mismatch(got, want)[0] == "output_aliases_input"
    assert mismatch(got, describe(x[1:], [x])) is None  # the reference returns a view: allowed


@cpu_only("the candidate reaches the input's memory through x.numpy(), which a CUDA tensor lacks")
def test_a_candidate_returning_an_inputs_memory_at_an_offset_is_rejected() -> None:
    # A new storage over the input's bytes: the storage pointers differ, the memory is the input's.
    prob = problem("return x[1:] * 1.0", "[torch.randn(9, 16)]")
    r = judged(prob, cand("return torch.from_numpy(x.numpy()[1:])"))
    rejected(r, "output_aliases_input", "overlaps")


# ---- the tolerance scales with the output's magnitude ---------------------------------------------
def test_bf16_arithmetic_on_small_outputs_fails() -> None:
    # |out| ~ 4e-3: bf16 rounding (~1e-5) sat under the fixed 1e-4.
    prob = problem("return torch.tanh(x) * 0.004", "[torch.randn(16, 40)]")
    r = judged(prob, cand("return (torch.tanh(x).bfloat16() * 0.004).float()"))
    rejected(r, "wrong_output", "trial 0", "the output's RMS")


@pytest.mark.parametrize("scale", [1e-3, 1e-2, 1.0])
def test_bf16_rounding_fails_and_fp32_summation_orders_pass_at_any_magnitude(scale: float) -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(64, 2048, generator=g, dtype=torch.float64)
    b = torch.randn(2048, 48, generator=g, dtype=torch.float64)
    r64 = (a @ b) * (scale / math.sqrt(2048))  # outputs of RMS ~ scale, long cancelling sums
    a32, b32 = a.float(), (b * (scale / math.sqrt(2048))).float()
    r32 = a32 @ b32
    reordered = sum(a32[:, k:k + 256] @ b32[k:k + 256] for k in range(2048 - 256, -1, -256))
    v = compare(reordered, r64, r32)
    assert v.ok and v.rule in ("tolerance", "fp32-error-multiple"), v
    v = compare(r32.bfloat16().float(), r64, r32)
    assert not v.ok and "error" in v.reason, v
    if scale < 1:
        assert "RMS" in v.reason, v.reason  # the scaled tolerance, named in the message
    # An explicit atol stays absolute: the caller chose it.
    assert compare(r32.bfloat16().float(), r64, r32, atol=1.0, rtol=0.0).ok
