"""Static checks, tested both ways: each adversarial candidate is caught by its named check on the
offending line (marked `# BAD`), and each near miss and realistic good candidate passes cleanly."""

from __future__ import annotations

import textwrap

import pytest
from kernelskill.eval.static_checks import CHECKS, StaticFailure, problem_is_fp32, run_static_checks

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def relu(x):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
"""


def candidate(body: str) -> str:
    """A KernelBench-style candidate: the Triton ReLU above plus `body` (imports, ModelNew ...)."""
    return HEADER + textwrap.dedent(body)


def assert_flagged(source: str, check: str, **policy: object) -> list[StaticFailure]:
    """Every line marked `# BAD` fails `check`, with a message that points at it (under the strict
    precision policy unless `policy` says otherwise)."""
    failures = run_static_checks(source, **{"precision": "strict", **policy})
    bad = [i for i, text in enumerate(source.splitlines(), 1) if "# BAD" in text]
    assert bad, "test bug: no line marked # BAD"
    hits = {f.line: f for f in failures if f.check == check}
    for line in bad:
        assert line in hits, f"line {line} not flagged by {check}: {failures}"
        assert hits[line].message.startswith(f"line {line}: ")
        assert hits[line].message.endswith(f"({check.replace('_', ' ')})")
    return failures


def assert_clean(source: str, **policy: bool) -> None:
    assert run_static_checks(source, **policy) == []


# --- adversarial candidates: (check, source) --------------------------------------------------------------

BAD = {
    "timer_patching": [
        """
        torch.cuda.synchronize = lambda *a, **k: None  # BAD
        torch.cuda.Event.elapsed_time = lambda self, end: 1e-3  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                return relu(x)
        """,
        """
        import time as clock
        import triton.testing

        cuda = torch.cuda


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                setattr(torch.cuda, "synchronize", lambda: None)  # BAD
                cuda.Event = object  # BAD
                clock.perf_counter = lambda: 0.0  # BAD
                triton.testing.do_bench = lambda fn, **kw: 0.001  # BAD
                type(torch.cuda.Event()).record = lambda self, s=None: None  # BAD

            def forward(self, x):
                return relu(x)
        """,
        """
        from torch.cuda import Event


        def noop(*args):
            return None


        Event.elapsed_time = lambda self, end: 1e-3  # BAD
        object.__setattr__(torch.cuda, "synchronize", noop)  # BAD
        torch.cuda.__dict__["synchronize"] = noop  # BAD
        torch.cuda.synchronize.__code__ = noop.__code__  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                return relu(x)
        """,
        """
        from unittest import mock  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                with mock.patch("torch.cuda.synchronize"):  # BAD
                    return relu(x)
        """,
    ],
    "threads_or_processes": [
        """
        import threading  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                threading.Thread(target=lambda: out.copy_(relu(x)), daemon=True).start()  # BAD
                return out
        """,
        """
        import os
        from concurrent.futures import ThreadPoolExecutor  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                os.system("nvidia-smi -lgc 2100")  # BAD
                with ThreadPoolExecutor(2) as pool:  # BAD
                    return pool.submit(relu, x).result()
        """,
    ],
    "side_stream": [
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.side = torch.cuda.Stream()  # BAD

            def forward(self, x):
                out = torch.empty_like(x)
                with torch.cuda.stream(self.side):  # BAD
                    out.copy_(relu(x))
                return out
        """,
        """
        from torch.cuda import Stream  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                s = Stream()  # BAD
                s.wait_stream(torch.cuda.current_stream())  # BAD
                torch.cuda.set_stream(s)  # BAD
                return relu(x)
        """,
    ],
    "fallback_to_reference": [
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                try:
                    return relu(x)
                except Exception:  # BAD
                    return torch.relu(x)
        """,
        """
        import contextlib


        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.relu(x)
                with contextlib.suppress(RuntimeError):  # BAD
                    out = relu(x)
                return out

            def safe(self, x):
                try:
                    return relu(x)
                finally:
                    return torch.relu(x)  # BAD
        """,
    ],
    "calls_reference": [
        """
        class ModelNew(Model):  # BAD
            pass
        """,
        """
        from problem import Model  # BAD
        from .reference import get_inputs  # BAD


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                self.ref = Model(*args)  # BAD

            def forward(self, x):
                return self.ref(x)
        """,
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super(Model, self).__init__()  # BAD

            def forward(self, x):
                return relu(x)
        """,
    ],
    "output_caching": [
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self._cache = {}

            def forward(self, x):
                key = x.data_ptr()  # BAD
                if key not in self._cache:
                    self._cache[key] = relu(x)  # BAD
                return self._cache[key]
        """,
        """
        import functools


        @functools.lru_cache(maxsize=None)  # BAD
        def cached_relu(x):
            return relu(x)


        class ModelNew(nn.Module):
            def forward(self, x):
                if id(x) == getattr(self, "_last_id", None):  # BAD
                    return self._last
                return cached_relu(x)
        """,
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self._out = None

            def forward(self, x):
                if self._out is None:
                    self._out = relu(x)  # BAD
                return self._out
        """,
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                return self._run(x, scale=2.0)

            def _run(self, x, scale):
                if getattr(self, "_y", None) is None:
                    self._y = relu(x) * scale  # BAD
                return self._y
        """,
        """
        _RESULTS = {}


        class ModelNew(nn.Module):
            def forward(self, x):
                key = tuple(x.shape)
                if key in _RESULTS and torch.equal(x, _RESULTS[key][0]):  # BAD
                    return _RESULTS[key][1]
                out = torch.empty_like(x)
                relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
                _RESULTS[key] = (x.clone(), out)  # BAD
                return out
        """,
    ],
    "call_counting": [
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.calls = 0
                self._tick = 0
                self._seen = []

            def forward(self, x):
                self.calls += 1  # BAD
                self._tick = (self._tick + 1) % 3  # BAD
                self._seen.append(None)  # BAD
                return relu(x)
        """,
        """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self._phase = iter(range(10**9))
                self._even = True

            def forward(self, x):
                self._even = not self._even  # BAD
                if next(self._phase) % 3 == 2:  # BAD
                    return x
                return relu(x)
        """,
        """
        import itertools

        _N = 0
        _counter = itertools.count()  # BAD


        def launch(x):
            global _N  # BAD
            _N = next(_counter)  # BAD
            return relu(x)


        class ModelNew(nn.Module):
            def forward(self, x):
                return launch(x)
        """,
    ],
    "precision_downgrade": [
        """
        @triton.jit
        def _split(x):
            # Looks like the compensated fp16 split, but lo is not x's residual.
            hi = x.to(tl.float16)  # BAD
            lo = (x - x).to(tl.float16)  # BAD
            return hi, lo


        @triton.jit
        def _half(x):
            hi = x.to(tl.float16)  # BAD
            return hi, hi


        @triton.jit
        def cast_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float16))  # BAD


        def alloc(x):
            return torch.empty(x.shape, dtype=torch.float16, device=x.device)  # BAD
        """,
        """
        @triton.jit
        def mm_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                acc += tl.dot(a, b)  # BAD
                acc += tl.dot(a, b, input_precision="tf32")  # BAD
                acc += tl.dot(a, b, allow_tf32=True)  # BAD
                acc += tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), input_precision="ieee")  # BAD
                acc += a @ b  # BAD
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """,
        """
        @triton.jit
        def mm3_kernel(a_ptr, al_ptr, b_ptr, bl_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
                al = tl.load(al_ptr + offs[:, None] * K + k + offs[None, :])
                b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                bl = tl.load(bl_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
                # Three one-pass dots that only look like the compensated triple.
                p = tl.dot(a, b, input_precision="tf32")  # BAD
                p = tl.dot(a, b, acc=p, input_precision="tf32")  # BAD
                p = tl.dot(a, b, acc=p, input_precision="tf32")  # BAD
                q = tl.dot(a, bl, input_precision="tf32")  # BAD
                q = tl.dot(al, b, input_precision="tf32")  # BAD
                q = tl.dot(a, b, acc=q, input_precision="tf32")  # BAD
                acc += p + q
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """,
        """
        PRECISION = "ieee"


        @triton.jit
        def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
            b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
            c = tl.dot(a, b, input_precision=PRECISION)  # BAD
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c)
        """,
        """
        torch.backends.cuda.matmul.allow_tf32 = True  # BAD
        torch.set_float32_matmul_precision("high")  # BAD


        class ModelNew(nn.Module):
            def forward(self, a, b):
                with torch.autocast("cuda"):  # BAD
                    c = torch.matmul(a.half(), b.to(torch.float16))  # BAD
                return c.float()
        """,
    ],
    "introspection": [
        """
        import gc  # BAD
        import sys


        class ModelNew(nn.Module):
            def forward(self, x):
                for obj in gc.get_objects():  # BAD
                    if type(obj).__name__ == "Model" and hasattr(obj, "last_output"):
                        return obj.last_output
                caller = sys._getframe(1)  # BAD
                return caller.f_back.f_locals["expected"]  # BAD
        """,
        """
        import inspect  # BAD


        def spy(module, args, output):
            globals()["LAST"] = output  # BAD


        torch.nn.modules.module.register_module_forward_hook(spy)  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                name = "get_" + "objects"
                return getattr(torch, name)  # BAD
        """,
    ],
    "dynamic_code": [
        """
        import pickle  # BAD

        KERNEL = "def fast(x):\\n    return x.clamp(min=0)\\n"
        exec(KERNEL)  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                with open("/tmp/expected.pkl", "rb") as f:  # BAD
                    return pickle.load(f)  # BAD
        """,
        """
        from math import *  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                fn = eval("torch.relu")  # BAD
                os = __import__("os")  # BAD
                code = compile("x", "<k>", "eval")  # BAD
                return fn(x)
        """,
    ],
    "global_state": [
        """
        import os

        os.environ["TRITON_F32_DEFAULT"] = "tf32"  # BAD
        torch.backends.cudnn.benchmark = True  # BAD
        torch.backends.cuda.matmul.allow_tf32 = False  # BAD
        torch._dynamo.config.cache_size_limit = 1  # BAD


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)  # BAD
                torch.set_default_dtype(torch.float64)  # BAD
                F.gelu = lambda x, approximate="none": x  # BAD

            def forward(self, x):
                return relu(x)
        """,
    ],
    # The allowlist (more cases, and the audit hook behind it, in test_static_allowlist.py).
    "import_allowlist": [
        """
        import os  # BAD
        from importlib import import_module  # BAD
        import torch.utils.cpp_extension  # BAD


        class ModelNew(nn.Module):
            def forward(self, x):
                return relu(x)
        """,
    ],
    "attribute_allowlist": [
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                torch.serialization.os.system("true")  # BAD
                return torch._C._nn.relu(x)  # BAD
        """,
    ],
    "reflection": [
        """
        class ModelNew(nn.Module):
            def forward(self, x):
                parts = x.__class__.__mro__  # BAD
                name = "sync" + "hronize"
                getattr(self, name)  # BAD
                return relu(x)
        """,
    ],
    "decorator_allowlist": [
        """
        import functools


        @functools.singledispatch  # BAD
        def fast(x):
            return relu(x)


        class ModelNew(nn.Module):
            def forward(self, x):
                return fast(x)
        """,
    ],
}


@pytest.mark.parametrize(("check", "body"), [
    pytest.param(c, b, id=f"{c}-{i}") for c, bodies in BAD.items() for i, b in enumerate(bodies)])
def test_adversarial_candidate_is_caught_on_its_line(check, body):
    assert_flagged(candidate(body), check)


def test_every_named_check_has_an_adversarial_case():
    assert set(BAD) == set(CHECKS) == {
        "timer_patching", "threads_or_processes", "side_stream", "fallback_to_reference", "calls_reference",
        "output_caching", "call_counting", "precision_downgrade", "introspection", "dynamic_code",
        "global_state", "import_allowlist", "attribute_allowlist", "reflection", "decorator_allowlist",
    }


# --- near misses: close to an adversarial pattern, but fine -------------------------------------------------

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


# --- precision policy -------------------------------------------------------------------------------------

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


# --- realistic good candidates -----------------------------------------------------------------------------

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
