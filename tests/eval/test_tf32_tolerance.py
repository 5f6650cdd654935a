"""Under --allow-tf32 the tolerance follows the policy: the error-multiple rule's yardstick is
PyTorch's own result with TF32 on (what the baselines compute), while the float64 reference stays
the judge. A CPU has no TF32, so the problem below stands in for it: its forward drifts by a
relative 1e-3 (TF32's rounding is 2^-11) exactly when cuDNN's TF32 flag is on."""

from __future__ import annotations

from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

PROBLEM = '''
import torch
import torch.nn as nn

N = 4096
SMALL = {"N": 300}


class Model(nn.Module):
    def forward(self, x):
        y = x * 3.0
        if torch.backends.cudnn.allow_tf32:  # stand-in for a TF32 convolution's rounding
            y = y * (1 + 1e-3 * torch.sin(torch.arange(y.numel(), dtype=y.dtype).view_as(y)))
        return y


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''


def candidate(drift: float) -> str:
    # Plain PyTorch with its own "TF32-like" error pattern (cos, not the problem's sin).
    return ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n"
            f"        return x * 3.0 * (1 + {drift} * torch.cos(torch.arange(x.numel(), dtype=x.dtype)))\n")


def run(drift: float, allow_tf32: bool):
    opts = EvalOptions(device="cpu", size="small", trials=2, timeout_s=120, baselines=False,
                       allow_tf32=allow_tf32)
    return evaluate(PROBLEM, candidate(drift), opts, problem_name="p.py", candidate_name="c.py")


def test_tf32_sized_error_fails_the_strict_policy() -> None:
    r = run(1e-3, allow_tf32=False)
    assert not r.correct and r.stage == "correctness", r.reason
    assert "wrong_output" in r.failed_checks


def test_tf32_sized_error_passes_under_the_tf32_policy() -> None:
    r = run(1e-3, allow_tf32=True)
    assert r.correct, r.reason
    assert r.pass_rule == "fp32-error-multiple"
    assert r.precision_policy == "tf32"
    assert r.torch_fp32_err and r.torch_fp32_err > 1e-4  # the yardstick was the TF32 result


def test_the_tf32_policy_still_rejects_errors_beyond_pytorchs_own() -> None:
    r = run(2e-2, allow_tf32=True)
    assert not r.correct and "wrong_output" in r.failed_checks, r.reason
