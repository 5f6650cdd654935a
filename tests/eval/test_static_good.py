"""Static checks on realistic good candidates (they pass), one graph-wrapper variant that is caching,
and the order failures are reported in."""

from __future__ import annotations

import pytest
from kernelskill.eval.static.checks import run_static_checks
from static_util import assert_clean, candidate

GOOD_ELEMENTWISE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((1024, 4), (4096, 8))],
                 key=["n"])
@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask) + tl.load(b_ptr + offs % cols, mask=mask)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y, mask=mask)


def bias_gelu(x, bias):
    assert x.is_contiguous() and x.shape[-1] == bias.shape[0]
    out = torch.empty_like(x)
    n = x.numel()
    bias_gelu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, bias, out, n, x.shape[-1])
    return out


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return bias_gelu(x.contiguous(), self.bias)
'''


GOOD_SOFTMAX = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        num_warps = 4 if block <= 2048 else 8
        softmax_kernel[(rows,)](x, out, x.stride(0), cols, BLOCK=block, num_warps=num_warps)
        return out
'''


GOOD_MATMUL = '''
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_stages=3, num_warps=8),
             triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_stages=4, num_warps=4)],
    key=["M", "N", "K"],
)
@triton.jit
def linear_kernel(a_ptr, w_ptr, b_ptr, c_ptr, M, N, K, sam, sak, swn, swk, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * swn + kk[:, None] * swk,
                    mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc = tl.dot(a, w, acc, input_precision="tf32x3")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, tl.maximum(acc, 0.0),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear_relu(x, weight, bias):
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
    linear_kernel[grid](x, weight, bias, out, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                        weight.stride(1), out.stride(0), out.stride(1))
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = math.sqrt(in_features)

    def forward(self, x):
        if x.shape[0] < 16:  # tiny batches: cuBLAS wins, same fp32 math
            return F.relu(F.linear(x, self.linear.weight, self.linear.bias))
        return linear_relu(x, self.linear.weight, self.linear.bias)
'''


GOOD_CUDA_GRAPH = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


def scale(x, s):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), s, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    """Replays the three tiny launches as one CUDA graph on the current stream."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self._graphs = {}

    def _impl(self, x):
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            y = self.conv(x)
        return scale(scale(y, 0.5), 2.0)

    def _capture(self, x):
        static_x = torch.empty_like(x)
        static_x.copy_(x)
        self._impl(static_x)  # warm-up: compiles the kernels outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = self._impl(static_x)
        return graph, static_x, static_y

    def forward(self, x):
        if not x.is_cuda:
            return self._impl(x)
        key = (tuple(x.shape), x.dtype, x.device)
        entry = self._graphs.get(key)
        if entry is None:
            static_x = x.clone()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = self._impl(static_x)
            entry = (graph, static_x, static_y)
            self._graphs[key] = entry
        graph, static_x, static_y = entry
        static_x.copy_(x)
        graph.replay()
        assert torch.cuda.current_stream() is not None
        return static_y
'''


@pytest.mark.parametrize("source", [GOOD_ELEMENTWISE, GOOD_SOFTMAX, GOOD_MATMUL, GOOD_CUDA_GRAPH],
                         ids=["elementwise", "softmax", "matmul_tf32x3", "cuda_graph"])
def test_realistic_good_candidates_pass(source):
    assert_clean(source)


def test_cuda_graph_output_stored_outside_capture_is_caching():
    """The graph wrapper is fine because static_y comes out of the capture; computing it eagerly is not."""
    eager = GOOD_CUDA_GRAPH.replace("""            with torch.cuda.graph(graph):
                static_y = self._impl(static_x)
            entry""", """            static_y = self._impl(static_x)
            entry""")
    assert eager != GOOD_CUDA_GRAPH
    lines = [f.line for f in run_static_checks(eager) if f.check == "output_caching"]
    stored = next(i for i, t in enumerate(eager.splitlines(), 1) if "self._graphs[key] = entry" in t)
    assert lines == [stored]


def test_failures_are_in_source_order_one_per_check_and_line():
    source = candidate("""
        import threading


        class ModelNew(nn.Module):
            def forward(self, x):
                self.calls += 1
                torch.cuda.synchronize = None
                return relu(x)
        """)
    failures = run_static_checks(source)
    assert [f.check for f in failures] == ["threads_or_processes", "import_allowlist", "call_counting",
                                           "timer_patching"]
    assert [f.line for f in failures] == sorted(f.line for f in failures)
    assert len({(f.check, f.line) for f in failures}) == len(failures)
    assert failures[3].message == f"line {failures[3].line}: assigns torch.cuda.synchronize (timer patching)"
