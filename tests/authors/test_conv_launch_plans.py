"""Launch plans of the vendor convolution's NCHW tail (skills/vendor-conv-fused-tail) and of the
direct depthwise convolution (skills/depthwise-conv-direct): each launcher is one runtime call
(`_cv_tail_run`, `_dw_run`); its plan (strides, sizes, constexprs, grid) is computed once per
signature of the operands (and the layer's attributes), on meta tensors, and reused with the
autotuner's pick. Calls with other batch and spatial sizes get their own plan and match
PyTorch's module."""

from __future__ import annotations

import ast
import inspect
import re

import torch
from author_util import author, count_autotuner_runs, problem, templates_used
from kernelskill.authors.base import AuthorTask
from kernelskill.eval.problem import exec_module
from kernelskill.eval.static.checks import run_static_checks

CONV1D = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 4, 3, padding=1)
        self.scale = nn.Parameter(torch.randn(4, 1))
    def forward(self, x):
        return torch.relu(self.conv(x)) * self.scale

def get_inputs():
    return [torch.randn(2, 3, 9)]

def get_init_inputs():
    return []
"""


# A cheap prologue (applied on every tap) and an epilogue with a per-channel operand.
DEPTHWISE = (CONV1D.replace("nn.Conv1d(3, 4, 3, padding=1)", "nn.Conv2d(3, 6, 3, padding=1, groups=3)")
             .replace("torch.randn(4, 1)", "torch.randn(6, 1, 1)")
             .replace("torch.relu(self.conv(x))", "self.conv(torch.relu(x))")
             .replace("torch.randn(2, 3, 9)", "torch.randn(2, 3, 5, 7)"))


def _check(source: str, template: str, launcher: str, run: str, kernel: str,
           calls: list[torch.Tensor]) -> None:
    # Under `strict` the first candidate of a plain convolution is the NCHW vendor call + tail.
    cand = author().generate(AuthorTask(problem=problem(source), device="cpu", precision="strict"))
    assert template in templates_used(cand), templates_used(cand)
    assert run_static_checks(cand.source) == []  # a signature-keyed plan is not output caching
    mod = exec_module(cand.source, "conv_plans_candidate.py", "conv_plans_candidate")
    ref = exec_module(source, "conv_plans_reference.py", "conv_plans_reference").Model()
    model = mod.ModelNew()
    model.load_state_dict(ref.state_dict())
    (name,) = [k for k in vars(mod) if re.fullmatch(rf"_{launcher}_\d+", k)]
    (fn,) = ast.parse(inspect.getsource(getattr(mod, name))).body
    (stmt,) = fn.body  # one statement: return run(...)
    assert isinstance(stmt, ast.Return) and ast.unparse(stmt.value.func) == run, ast.unparse(stmt)
    runs = count_autotuner_runs(mod, rf"_{kernel}_\d+")
    with torch.no_grad():
        for x in calls:
            torch.testing.assert_close(model(x), ref(x))
    plans = getattr(mod, f"{name}_plans")
    assert len(plans) == len(calls) - 1  # the last call reused the first signature's plan
    assert all(plan[-1] for plan in plans.values())  # each kept its autotuning pick
    assert list(runs.values()) == [len(calls) - 1]  # ... and the reused plan launched past the autotuner


def test_vendor_tail_launcher_is_one_call_with_a_plan_per_signature() -> None:
    calls = [torch.randn(2, 3, 9), torch.randn(1, 3, 17), torch.randn(3, 3, 9), torch.randn(2, 3, 9)]
    _check(CONV1D, "vendor-conv-fused-tail", "vendor_conv", "_cv_tail_run", "conv_epilogue_kernel", calls)


def test_depthwise_launcher_is_one_call_with_a_plan_per_signature() -> None:
    calls = [torch.randn(2, 3, 5, 7), torch.randn(1, 3, 8, 4), torch.randn(2, 3, 10, 14)[..., ::2, ::2],
             torch.randn(2, 3, 5, 7)]
    _check(DEPTHWISE, "depthwise-conv-direct", "dwconv", "_dw_run", "dwconv_kernel", calls)
