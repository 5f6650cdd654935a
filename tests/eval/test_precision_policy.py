"""One precision policy for both sides: candidate, yardstick and baselines run under the same flags.

A CPU has no TF32, so the problems below stand in for it: their forward drifts by a relative 1e-3
(TF32's rounding is 2^-11) exactly when cuDNN's (a "convolution") or cuBLAS's (a "matmul") TF32
flag is on. The yardstick of the error-multiple rule is PyTorch's own result under the policy's
flags, so a TF32-sized error passes where the policy gives eager that error and fails where not.
"""

from __future__ import annotations

import pytest
from kernelskill.eval.api import evaluate
from kernelskill.eval.precision import POLICIES, policy, resolve
from kernelskill.eval.types import EvalOptions

DRIFTING = '''
import torch
import torch.nn as nn

N = 4096
SMALL = {"N": 300}


class Model(nn.Module):
    def forward(self, x):
        y = x * 3.0
        if torch.backends.FLAG.allow_tf32:  # stand-in for a TF32 kernel's rounding
            y = y * (1 + 1e-3 * torch.sin(torch.arange(y.numel(), dtype=y.dtype).view_as(y)))
        return y


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''
CONV, MATMUL = DRIFTING.replace("FLAG", "cudnn"), DRIFTING.replace("FLAG", "cuda.matmul")


def candidate(drift: float) -> str:
    # Plain PyTorch with its own "TF32-like" error pattern (cos, not the problem's sin).
    return ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n"
            f"        return x * 3.0 * (1 + {drift} * torch.cos(torch.arange(x.numel(), dtype=x.dtype)))\n")


def run(problem: str, drift: float, precision: str, baselines: bool = False):
    opts = EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines=baselines,
                       precision=precision)
    return evaluate(problem, candidate(drift), opts, problem_name="p.py", candidate_name="c.py")


def test_policies_name_their_flags() -> None:
    assert policy(None).name == "default"
    assert POLICIES["default"].flags() == {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": True}
    assert POLICIES["strict"].flags() == {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False}
    assert POLICIES["tf32"].flags() == {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True}
    with pytest.raises(ValueError, match="default, strict, tf32"):
        policy("fp16")
    assert resolve(None, True) == "tf32" and resolve("strict", None) == "strict"
    assert resolve(None, None) is None
    with pytest.raises(ValueError, match="--allow-tf32"):
        resolve("strict", True)


@pytest.mark.parametrize(("problem", "precision", "passes"), [
    (CONV, "default", True),     # eager's convolutions run TF32 by default: so may the candidate's
    (MATMUL, "default", False),  # ... but eager's matmuls are IEEE fp32
    (CONV, "strict", False),
    (MATMUL, "strict", False),
    (CONV, "tf32", True),
    (MATMUL, "tf32", True),
], ids=["conv-default", "matmul-default", "conv-strict", "matmul-strict", "conv-tf32", "matmul-tf32"])
def test_a_tf32_sized_error_passes_exactly_where_the_policy_gives_eager_one(problem: str, precision: str,
                                                                           passes: bool) -> None:
    r = run(problem, 1e-3, precision)
    assert r.precision_policy == precision and r.precision_flags == POLICIES[precision].flags()
    if passes:
        assert r.correct, r.reason
        assert r.pass_rule == "fp32-error-multiple"
        assert r.torch_fp32_err and r.torch_fp32_err > 1e-4  # the yardstick was the TF32-flagged result
    else:
        assert not r.correct and r.stage == "correctness" and "wrong_output" in r.failed_checks, r.reason


def test_the_tf32_policy_still_rejects_errors_beyond_pytorchs_own() -> None:
    r = run(CONV, 2e-2, "tf32")
    assert not r.correct and "wrong_output" in r.failed_checks, r.reason


# The reference raises when an fp32 forward sees other flags than the policy's: the yardstick and
# the eager baseline (timed on CPU too) must run under them, the float64 judge is exempt.
FLAG_CHECKING = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        seen = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        if x.dtype == torch.float32 and seen != EXPECTED:
            raise RuntimeError(f"ran under {seen}, not the policy's EXPECTED")
        return x * 2.0


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''
FLAG_CHECKING_CANDIDATE = FLAG_CHECKING.replace("class Model(", "class ModelNew(")


@pytest.mark.parametrize("precision", ["default", "strict", "tf32"])
def test_candidate_yardstick_and_baselines_run_under_the_policys_flags(precision: str) -> None:
    flags = POLICIES[precision]
    expected = repr((flags.matmul_tf32, flags.conv_tf32))
    problem = FLAG_CHECKING.replace("EXPECTED", expected)
    opts = EvalOptions(device="cpu", size="small", trials=1, timeout_s=120, baselines=True,
                       precision=precision)
    r = evaluate(problem, FLAG_CHECKING_CANDIDATE.replace("EXPECTED", expected), opts)
    assert r.correct, r.reason
    assert r.eager_ms is not None  # the eager baseline ran (under the same flags, or it would raise)


def test_an_unknown_policy_is_a_usage_error() -> None:
    r = evaluate(CONV, candidate(0.0), EvalOptions(device="cpu", size="small", precision="fp16"))
    assert r.usage_error and "default, strict, tf32" in (r.reason or "")


def test_old_requests_with_allow_tf32_mean_the_tf32_policy() -> None:
    assert EvalOptions.from_dict({"allow_tf32": True}).precision == "tf32"
    assert EvalOptions.from_dict({"allow_tf32": False}).precision == "default"
