"""The speed-of-light rates follow the precision policy (eval/timing/roofline.py): convolutions at
the rate the policy allows convolutions, every other FLOP at the rate it allows matmuls."""

import subprocess
import sys

import pytest
import torch
from kernelskill.eval.precision import policy
from kernelskill.eval.timing.roofline import Ceilings, Work, count_work, floor_ms, policy_floor_ms

# H200-like ceilings: cuBLAS fp32 50, TF32 400, fp16 750 TFLOP/s; strict fp32 reaches 750 / 3.
H200 = Ceilings(gpu="x", bandwidth_gbs=4000.0, fp32_tflops=50.0, measured_at=0.0, tf32_tflops=400.0,
                fp16_tflops=750.0)


def test_strict_floor_counts_a_third_of_each_tensor_core_rate() -> None:
    # A strict-fp32 candidate may use three fp16 (or TF32) products per multiply-add, so its floor
    # rate is 750 / 3, not 50: with 50 the floor would sit above real kernels.
    c = H200
    assert c.matmul_tflops(allow_tf32=False) == 250.0
    assert c.matmul_tflops(allow_tf32=True) == 400.0
    assert floor_ms(2.5e11, 0.0, c) == 1.0  # 250 GFLOP at 250 TFLOP/s
    old = Ceilings(gpu="x", bandwidth_gbs=4000.0, fp32_tflops=50.0, measured_at=0.0)  # a cache without them
    assert old.matmul_tflops(allow_tf32=False) == 50.0


def test_the_flop_count_imports_no_dynamo() -> None:
    # A fresh interpreter: this one may have imported dynamo for another test already.
    code = ("import sys, torch\n"
            "from kernelskill.eval.timing.roofline import count_work\n"
            "flops, nbytes, conv = count_work(torch.nn.Linear(64, 32), [torch.randn(8, 64)])\n"
            "print(flops, nbytes, conv, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # 2 x 8 x 64 x 32 FLOPs, none of a convolution; bytes: input, weight, bias and output once each, fp32.
    assert out.stdout.split() == ["32768.0", str(float(4 * (8 * 64 + 64 * 32 + 32 + 8 * 32))), "0.0", "False"]


def default_floor(flops: float, nbytes: float = 0.0, conv_flops: float = 0.0) -> float:
    """The floor the judge and the profiler report under the `default` policy."""
    return policy_floor_ms(Work(flops, nbytes, conv_flops), H200, policy("default"))


def test_a_gemm_under_the_default_policy_takes_the_fp32_accurate_rate() -> None:
    # `default` allows TF32 for convolutions only: a GEMM's floor must not use the TF32 rate,
    # which no legal (fp32-accurate) kernel reaches.
    assert default_floor(2.5e11) == pytest.approx(1.0)  # 250 GFLOP at 250 TFLOP/s, not 400
    assert default_floor(2.5e11) == pytest.approx(floor_ms(2.5e11, 0.0, H200, False))


def test_convolution_flops_take_the_tf32_rate_where_the_policy_allows_it() -> None:
    assert default_floor(4e11, conv_flops=4e11) == pytest.approx(1.0)  # 400 GFLOP at 400 TFLOP/s
    assert policy_floor_ms(Work(4e11, 0.0, 4e11), H200, policy("strict")) == pytest.approx(1.6)  # at 250
    assert policy_floor_ms(Work(4e11, 0.0, 0.0), H200, policy("tf32")) == pytest.approx(1.0)  # GEMM at 400
    # conv_tf32 left out follows matmul_tf32.
    assert floor_ms(4e11, 0.0, H200, True, conv_flops=4e11) == pytest.approx(1.0)


def test_a_mixed_forward_sums_both_parts_and_bytes_still_bound_it() -> None:
    # 250 GFLOP of GEMM at 250 plus 400 GFLOP of convolution at 400: 1 + 1 ms.
    assert default_floor(6.5e11, conv_flops=4e11) == pytest.approx(2.0)
    assert default_floor(6.5e11, 4e10, conv_flops=4e11) == pytest.approx(10.0)  # 40 GB at 4000 GB/s
    # Conv FLOPs beyond the total (a malformed count handed in) never lower the floor below it.
    assert default_floor(4e11, conv_flops=9e11) == pytest.approx(1.0)


def test_a_handed_over_pair_counts_no_convolution_flops() -> None:
    assert Work.given([1.0, 2.0]) == Work(1.0, 2.0, 0.0)
    assert Work.given([1.0, 2.0, 0.5]) == Work(1.0, 2.0, 0.5)
    assert Work.given(None) is None and Work.given([1.0]) is None


def test_the_count_keeps_the_convolutions_apart() -> None:
    conv, linear = torch.nn.Conv2d(4, 6, (3, 5), padding=1, groups=2), torch.nn.Linear(6 * 5 * 3, 7)
    model = torch.nn.Sequential(conv, torch.nn.Flatten(), linear)
    x = torch.randn(2, 4, 5, 5)
    work = count_work(model, [x])
    out_elems = 2 * 6 * 5 * 3  # padding 1: (5 + 2 - 3 + 1) x (5 + 2 - 5 + 1)
    conv_flops = 2 * out_elems * (4 // 2) * 3 * 5
    assert work.conv_flops == conv_flops
    assert work.flops == conv_flops + 2 * 2 * (6 * 5 * 3) * 7  # the Linear's GEMM on top
    params = sum(p.numel() for p in model.parameters())
    assert work.bytes == 4 * (x.numel() + params + 2 * 7)
