"""Attention on fp16 parts against the default tf32x3 kernel and eager SDPA, one process.

For each shape: eager `F.scaled_dot_product_attention` in fp32 (PyTorch's default flags), the
attention family's default kernel (in-register tf32x3 dots, autotuned over kernel.py's list) and
the `f16_parts` variant (K and V split once into scaled fp16 parts, three fp16 products per dot,
autotuned over kernel_parts.py's list), with and without `head_major`, and with `split_d`; the
time of the parts' preparation alone; each output's error against float64 as the interpreter test measures it
(|out - ref| over the reference on |v|, so each element against its own terms' magnitude).

    python3 tests/gpu/attention_parts.py [--quick]
    TRITON_INTERPRET=1 python3 tests/gpu/attention_parts.py --dry   # tiny shapes on the CPU

Needs torch, triton and the repository on PYTHONPATH as `kernelskill` (tests/gpu/host_setup.sh).
Median of triton.testing.do_bench (L2 flushed between calls) in ms; TFLOP/s counts the useful
4 * B * H * S^2 * d (halved under a causal mask).
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
import triton
from kernelskill.authors.builtin.families.attention.kernel import CONFIGS, TUNE_KEY, _attn_fwd_kernel
from kernelskill.authors.builtin.families.attention.kernel_parts import PARTS_CONFIGS, _attn_parts_kernel
from kernelskill.authors.builtin.runtime.attention import _ATTN_ADD, _ATTN_NONE, _attn_run
from kernelskill.authors.builtin.runtime.attention_parts import _attn_parts, _attn_parts_run
from kernelskill.authors.builtin.runtime.common import _configs

# (batch, heads, seq, head dim, mask: None | "head_bias", causal)
SHAPES = [
    (8, 16, 1536, 80, "head_bias", False),
    (8, 16, 1536, 80, None, False),
    (4, 16, 2048, 64, None, True),
    (8, 12, 1024, 128, None, False),
    (16, 12, 512, 64, None, False),
]


def kernels() -> tuple[object, object]:
    default = triton.autotune(configs=_configs(CONFIGS), key=TUNE_KEY)(_attn_fwd_kernel)
    parts = triton.autotune(configs=_configs(PARTS_CONFIGS), key=TUNE_KEY)(_attn_parts_kernel)
    return default, parts


def error(out: torch.Tensor, q, k, v, mask, causal: bool, scale: float) -> float:  # noqa: ANN001
    q, k, v = q.double(), k.double(), v.double()
    m = None if mask is None else mask.double()
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale)
    bound = F.scaled_dot_product_attention(q, k, v.abs(), attn_mask=m, is_causal=causal, scale=scale)
    return ((out.double() - ref).abs() / (bound + 1e-300)).max().item()


def timed_once(fn) -> float:  # noqa: ANN001
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def one_shape(shape: tuple, dev: str, bench, kerns) -> list[tuple]:  # noqa: ANN001
    """The rows of one shape: (shape, path, ms, TFLOP/s, error)."""
    b, h, s, d, mask_kind, causal = shape
    default, parts = kerns
    q, k, v = (torch.randn(b, h, s, d, device=dev) for _ in range(3))
    mask = 0.5 * torch.randn(h, s, s, device=dev) if mask_kind else None
    scale = 0.8 / d ** 0.5
    form = {"kt": False, "packed": None, "divide": False, "mask": _ATTN_ADD if mask_kind else _ATTN_NONE,
            "fill": "-inf", "mask_first": False, "causal": causal, "bthd": False, "weights": "softmax"}
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    head, fp = {**form, "head_major": True}, {**form, "f16_parts": True}
    fph, fps = {**fp, "head_major": True}, {**fp, "split_d": True}
    runs = {
        "eager sdpa": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                            scale=scale),
        "default tf32x3": lambda: _attn_run(default, q, k, v, mask, scale, form),
        "default head_major": lambda: _attn_run(default, q, k, v, mask, scale, head),
        "f16_parts": lambda: _attn_parts_run(parts, q, k, v, mask, scale, fp),
        "f16_parts head_major": lambda: _attn_parts_run(parts, q, k, v, mask, scale, fph),
        "f16_parts split_d": lambda: _attn_parts_run(parts, q, k, v, mask, scale, fps),
        "parts preparation": lambda: _attn_parts(k, v),
    }
    name = f"{b}x{h}x{s}x{d}{' bias' if mask_kind else ''}{' causal' if causal else ''}"
    rows = []
    for label, fn in runs.items():
        nan = float("nan")
        try:
            out = fn()
            err = nan if label == "parts preparation" else error(out, q, k, v, mask, causal, scale)
            ms = bench(fn)
            rows.append((name, label, ms, nan if label == "parts preparation" else flops / ms / 1e9, err))
        except Exception as e:  # noqa: BLE001 - one failing path must not hide the others
            rows.append((name, label, nan, nan, nan))
            print(f"{name} {label}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
        print(f"{name:28s} {label:22s} {rows[-1][2]:8.3f} ms {rows[-1][3]:7.1f} TFLOP/s "
              f"err {rows[-1][4]:.2e}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the first two shapes only")
    ap.add_argument("--dry", action="store_true", help="each shape at 1 x 2 x 70 on the CPU, one call "
                    "timed (under TRITON_INTERPRET=1: checks the script, not the speed)")
    args = ap.parse_args()
    torch.manual_seed(0)
    kerns = kernels()
    if args.dry:
        dev, bench = "cpu", timed_once
    else:
        dev = "cuda"

        def bench(fn) -> float:  # noqa: ANN001
            return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
    rows = []
    for shape in SHAPES[:2] if args.quick else SHAPES:
        if args.dry:
            shape = (1, 2, 70, *shape[3:])
        rows += one_shape(shape, dev, bench, kerns)
        if not args.dry:
            torch.cuda.empty_cache()
    print("\n| shape | path | ms | TFLOP/s | error |\n|---|---|---:|---:|---:|")
    for name, label, ms, tf, err in rows:
        print(f"| {name} | {label} | {ms:.3f} | {tf:.1f} | {err:.1e} |")


if __name__ == "__main__":
    main()
