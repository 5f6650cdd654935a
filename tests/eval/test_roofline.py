"""The speed-of-light matmul rate follows the precision policy (eval/roofline.py)."""

from kernelskill.eval.roofline import Ceilings, floor_ms


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
