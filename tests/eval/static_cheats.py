"""Adversarial candidates, part one: cheats at run time (timers, threads, streams, the reference,
cached outputs, call counting). Each body's `# BAD` lines must fail the named check."""

CHEATS = {
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
}
