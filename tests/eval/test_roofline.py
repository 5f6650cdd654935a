"""The speed-of-light matmul rate follows the precision policy (eval/timing/roofline.py)."""

import subprocess
import sys

from kernelskill.eval.timing.roofline import Ceilings, floor_ms


def test_strict_floor_counts_a_third_of_each_tensor_core_rate() -> None:
    # H200-like ceilings: cuBLAS fp32 50, TF32 400, fp16 750 TFLOP/s. A strict-fp32 candidate may
    # use three fp16 (or TF32) products per multiply-add, so its floor rate is 750 / 3, not 50:
    # with 50 the floor would sit above real kernels.
    c = Ceilings(gpu="x", bandwidth_gbs=4000.0, fp32_tflops=50.0, measured_at=0.0, tf32_tflops=400.0,
                 fp16_tflops=750.0)
    assert c.matmul_tflops(allow_tf32=False) == 250.0
    assert c.matmul_tflops(allow_tf32=True) == 400.0
    assert floor_ms(2.5e11, 0.0, c) == 1.0  # 250 GFLOP at 250 TFLOP/s
    old = Ceilings(gpu="x", bandwidth_gbs=4000.0, fp32_tflops=50.0, measured_at=0.0)  # a cache without them
    assert old.matmul_tflops(allow_tf32=False) == 50.0


def test_the_flop_count_imports_no_dynamo() -> None:
    # A fresh interpreter: this one may have imported dynamo for another test already.
    code = ("import sys, torch\n"
            "from kernelskill.eval.timing.roofline import count_work\n"
            "flops, nbytes = count_work(torch.nn.Linear(64, 32), [torch.randn(8, 64)])\n"
            "print(flops, nbytes, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # 2 x 8 x 64 x 32 FLOPs; bytes: input, weight, bias and output once each, fp32.
    assert out.stdout.split() == ["32768.0", str(float(4 * (8 * 64 + 64 * 32 + 32 + 8 * 32))), "False"]
