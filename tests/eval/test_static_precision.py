"""Static checks under the precision policies, and which problems count as fp32."""

from __future__ import annotations

import pytest
from kernelskill.eval.static.checks import problem_is_fp32, run_static_checks
from static_util import assert_clean, assert_flagged, candidate

FP16_KERNEL = """
    @triton.jit
    def mm_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
        b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
        c = tl.dot(a, b)  # BAD
        tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c.to(tl.float16))  # BAD


    class ModelNew(nn.Module):
        def forward(self, a, b):
            c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float16)  # BAD
            mm_kernel[(1,)](a.half(), b.half(), c, BLOCK=32)  # BAD
            return c
    """


def test_fp16_is_fine_when_the_problem_is_fp16():
    assert_clean(candidate(FP16_KERNEL), fp32_problem=False)


def test_fp16_is_a_downgrade_on_an_fp32_problem():
    assert_flagged(candidate(FP16_KERNEL), "precision_downgrade")


def test_allow_tf32_permits_tf32_but_not_fp16():
    tf32_only = candidate("""
        torch.backends.cuda.matmul.allow_tf32 = True


        @triton.jit
        def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
            b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b, input_precision="tf32"))
        """)
    failures = run_static_checks(tf32_only, precision="tf32")
    assert [f.check for f in failures] == ["global_state"]  # the flag assignment is still global state
    assert "precision_downgrade" in {f.check for f in run_static_checks(tf32_only, precision="strict")}
    # Under `default` the TF32 dot and the matmul switch are refused as under strict (eager's
    # matmuls are IEEE fp32); scoped TF32 cuDNN convolutions, as eager runs them, are legal.
    default = {f.check for f in run_static_checks(tf32_only, precision="default")}
    assert default == {"global_state", "precision_downgrade"}
    scoped = candidate("""
        def conv(x, w):
            with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):
                return torch.nn.functional.conv2d(x, w)
        """)
    assert run_static_checks(scoped, precision="default") == []
    assert "precision_downgrade" in {f.check for f in run_static_checks(scoped, precision="strict")}
    fails = run_static_checks(candidate(FP16_KERNEL), precision="tf32")
    flagged = {f.line for f in fails if f.check == "precision_downgrade"}
    tl_dot_line = next(i for i, t in enumerate(candidate(FP16_KERNEL).splitlines(), 1) if "tl.dot(a, b)" in t)
    assert tl_dot_line not in flagged and len(flagged) == 3


# --- problem_is_fp32 --------------------------------------------------------------------------------------

FP32_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dim; the first half of the rows are large."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 128)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("dtype_use", [
    "torch.randn(16, 128, dtype=torch.float16)",
    "torch.randn(16, 128).half()",
    "torch.randn(16, 128, dtype=torch.bfloat16)",
    "torch.randn(16, 128).to(torch.half)",
])
def test_problem_with_low_precision_inputs_is_not_fp32(dtype_use):
    assert problem_is_fp32(FP32_PROBLEM)
    assert not problem_is_fp32(FP32_PROBLEM.replace("torch.randn(16, 128)]", dtype_use + "]"))
