"""Static checks, near misses: code close to an adversarial pattern that must pass cleanly; every
named check has one."""

from __future__ import annotations

import pytest
from kernelskill.eval.static.checks import CHECKS
from static_util import assert_clean, candidate

NEAR_MISSES = {
    "timer_patching: reads and calls torch.cuda, keeps its own `time` attribute": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.time_steps = 4
                self.stream_id = torch.cuda.current_stream() if torch.cuda.is_available() else None

            def forward(self, x):
                torch.cuda.synchronize()
                return relu(x)
        """,
    "side_stream: the current stream, a CUDA graph captured and replayed on it": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.graph = None

            def forward(self, x):
                stream = torch.cuda.current_stream()
                stream.synchronize()
                if self.graph is None:
                    self.static_x = x.clone()
                    self.graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(self.graph):
                        self.static_y = relu(self.static_x)
                self.static_x.copy_(x)
                self.graph.replay()
                return self.static_y
        """,
    "threads_or_processes: an argument named signal, a local named os": """
        import math


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                os = {"path": "a/b"}
                self.cache_dir = os["path"]

            def forward(self, signal):
                return relu(signal) * math.sqrt(2.0)
        """,
    "fallback_to_reference: handler only re-raises, try/finally without return": """
        class ModelNew(nn.Module):
            def forward(self, x):
                try:
                    out = relu(x)
                except triton.CompilationError as e:
                    raise RuntimeError(f"relu kernel failed to compile: {e}") from e
                try:
                    return out
                finally:
                    del x
        """,
    "calls_reference: `Model` only in text, ModelNew and model_dim names": """
        class ModelNew(nn.Module):
            \"\"\"Drop-in replacement for the reference Model, same constructor.\"\"\"

            def __init__(self, model_dim: int = 64):
                super().__init__()
                self.model_dim = model_dim

            def forward(self, x):
                return relu(x)  # same output as Model.forward
        """,
    "output_caching: configs keyed by shape, lazily cached weight layout": """
        def pick_block(n):
            return min(4096, triton.next_power_of_2(n))


        class ModelNew(nn.Module):
            def __init__(self, features: int = 64):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(features, features))
                self._configs = {}
                self._wt = None

            def forward(self, x):
                key = (x.shape, x.dtype, x.device)
                block = self._configs.get(key)
                if block is None:
                    block = pick_block(x.shape[-1])
                    self._configs[key] = block
                if self._wt is None:
                    self._wt = self.weight.t().contiguous()
                out = torch.empty_like(x)
                relu_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
                return out @ self._wt
        """,
    "call_counting: moving a kept tensor to the input's device (KernelBench LSTM style)": """
        class ModelNew(nn.Module):
            def __init__(self, layers: int = 2, hidden: int = 8):
                super().__init__()
                self.h0 = torch.randn((layers, 10, hidden))
                self.lstm = nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)

            def forward(self, x):
                self.h0 = self.h0.to(x.device)
                out, state = self.lstm(x, (self.h0, self.h0))
                return relu(out[:, -1, :])
        """,
    "output_caching: autograd.Function keeps its inputs on ctx": """
        class _Relu(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                ctx.numel = x.numel()
                return relu(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * (x > 0)


        class ModelNew(nn.Module):
            def forward(self, x):
                return _Relu.apply(x)
        """,
    "call_counting: accumulators that are locals": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = nn.Parameter(torch.zeros(8))
                self.n_layers = 1
                self.n_layers += 1

            def forward(self, x):
                out = relu(x)
                out += self.bias
                out = self.bias.add(out)  # Tensor.add on a parameter, not a growing container
                total = 0
                for i in range(self.n_layers):
                    total += i
                return out * total
        """,
    "precision_downgrade: fp32-exact tl.dot spellings": """
        @triton.jit
        def mm_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                acc += tl.dot(a, b, input_precision="ieee")
                acc = tl.dot(a, b, acc, input_precision="tf32x3")
                acc += tl.dot(a, b, allow_tf32=False)
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc.to(tl.float32))


        class ModelNew(nn.Module):
            def forward(self, a, b):
                with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
                    return torch.matmul(a, b).float() + (a @ b)
        """,
    "precision_downgrade: the error-compensated 3xTF32 triple on pre-split operands": """
        @triton.jit
        def mm3_kernel(a_ptr, al_ptr, b_ptr, bl_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                al = tl.load(al_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                bl = tl.load(bl_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                part = tl.dot(a, bl, input_precision="tf32")
                part = tl.dot(al, b, acc=part, input_precision="tf32")
                part = tl.dot(a, b, acc=part, input_precision="tf32")
                acc += part
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """,
    "precision_downgrade: the error-compensated fp16 split and its triple": """
        @triton.jit
        def _split_f16(x):
            hi = x.to(tl.float16)
            lo = (x - hi.to(tl.float32)).to(tl.float16)
            return hi, lo


        @triton.jit
        def prep_kernel(x_ptr, hi_ptr, lo_ptr, s, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            hi, lo = _split_f16(tl.load(x_ptr + offs) * s)
            tl.store(hi_ptr + offs, hi)
            tl.store(lo_ptr + offs, lo)


        @triton.jit
        def mm3_kernel(a_ptr, al_ptr, b_ptr, bl_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                al = tl.load(al_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                bl = tl.load(bl_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                part = tl.dot(a, bl)
                part = tl.dot(al, b, acc=part)
                part = tl.dot(a, b, acc=part)
                acc += part
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


        def parts(x):
            hi = torch.empty(x.shape, device=x.device, dtype=torch.float16)
            return hi, torch.empty_like(hi, dtype=torch.float16)
        """,
    "introspection: getattr with a literal name, or on self": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                for i in range(2):
                    setattr(self, f"conv{i}", nn.Conv2d(3, 3, 3))

            def forward(self, x):
                dt = getattr(tl, "float32")
                for i in range(2):
                    x = getattr(self, f"conv{i}")(x)
                return relu(x) if dt is not None else x
        """,
    "dynamic_code: torch.compile is an attribute, not the builtin": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self._fn = torch.compile(self._impl, mode="max-autotune-no-cudagraphs")

            def _impl(self, x):
                return relu(x)

            def forward(self, x):
                return self._fn(x)
        """,
    "global_state: scoped cudnn flags and reading flags": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)

            def forward(self, x):
                if torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.enabled:
                    pass
                with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
                    y = F.conv2d(x, self.conv.weight, self.conv.bias)
                return relu(y)
        """,
    "import_allowlist: torch submodules, libdevice, numpy, typing helpers": """
        import dataclasses
        import functools
        from typing import Optional

        import numpy as np
        import torch.nn.init as init
        from triton.language.extra import libdevice


        class ModelNew(nn.Module):
            def forward(self, x, scale: Optional[float] = None):
                return relu(x) * float(np.sqrt(2.0))
        """,
    "attribute_allowlist: CUDA graphs, events, cudnn flags, Triton's version": """
        class ModelNew(nn.Module):
            def forward(self, x):
                graph = torch.cuda.CUDAGraph() if torch.cuda.is_available() else None
                pool = torch.cuda.graph_pool_handle() if graph is not None else None
                major = int(triton.__version__.split(".")[0])
                with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
                    return relu(x) * major if pool is None else relu(x)
        """,
    "reflection: getattr with a constant or a literal-prefix name on self, type(x) read": """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.w0 = nn.Parameter(torch.ones(4))

            def forward(self, x):
                w = getattr(self, "w0")
                w = getattr(self, f"w{0}") if hasattr(self, "w0") else w
                assert type(x) is torch.Tensor, f"{type(x).__name__}"
                return relu(x) * w.sum()
        """,
    "decorator_allowlist: jit, autotune, heuristics, no_grad, property, own decorator": """
        def traced(fn):
            return fn


        @triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % 128 == 0})
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


        class ModelNew(nn.Module):
            @property
            def scale(self):
                return 2.0

            @staticmethod
            @traced
            def helper(x):
                return x

            @torch.no_grad()
            def forward(self, x):
                return relu(self.helper(x)) * self.scale
        """,
}


@pytest.mark.parametrize("body", NEAR_MISSES.values(), ids=list(NEAR_MISSES))
def test_near_miss_passes(body):
    assert_clean(candidate(body))


def test_every_named_check_has_a_near_miss():
    assert {k.split(":")[0] for k in NEAR_MISSES} == set(CHECKS)
