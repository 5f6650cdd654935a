"""Counting the Triton kernels a candidate launches (compiled or interpreted).

The harness wraps Triton's launch entry points while the candidate runs and records which
`@triton.jit` functions ran; only functions defined in the candidate's own module count as
custom kernels (a candidate that merely calls torch.compile launches none of its own). This runs in
the candidate process, beside candidate code, so what it reports is a claim: the judge keeps only
the names its own reading of the source finds to be Triton kernels (eval/judge/kernel_names.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from .. import precision as P

_launched: set[tuple[str, str]] = set()


def _wrap(cls: type) -> None:
    if getattr(cls.run, "_kernelskill_wrapped", False):
        return
    original = cls.run

    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202
        fn = getattr(self, "fn", None)
        mod, name = getattr(fn, "__module__", None), getattr(fn, "__name__", None)
        # Exact strings only: a str subclass set as a name would run candidate code (its __hash__,
        # __eq__) wherever the evaluator handles the names, outside any timed region.
        if type(mod) is str and type(name) is str:
            _launched.add((mod, name))
        return original(self, *args, **kwargs)

    run._kernelskill_wrapped = True  # type: ignore[attr-defined]
    cls.run = run


def install() -> None:
    """Wrap JITFunction.run and InterpretedFunction.run once per process."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return
    _wrap(JITFunction)
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return
    _wrap(InterpretedFunction)


@contextlib.contextmanager
def recording() -> Iterator[set[tuple[str, str]]]:
    """Collect (module, name) of every Triton kernel launched inside the block."""
    install()
    _launched.clear()
    seen: set[tuple[str, str]] = set()
    try:
        yield seen
    finally:
        seen.update(_launched)
        _launched.clear()


def own_kernels(seen: set[tuple[str, str]], module_name: str) -> list[str]:
    """The names in `seen` of kernels defined in the module `module_name` (none when that is not
    an exact string: the candidate's module can rebind its own __name__)."""
    if type(module_name) is not str:
        return []
    return sorted(name for mod, name in seen if type(mod) is str and type(name) is str and mod == module_name)


def kernel_breakdown(model: torch.nn.Module, inputs: list[Any], policy: P.Policy) -> list[dict[str, Any]]:
    """Per-kernel CUDA time of one call, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), P.applied(policy):
        model(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*inputs)
            torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
        if t > 0 and ev.count:
            rows.append({"name": ev.key, "time_us": float(t), "launches": int(ev.count)})
    return sorted(rows, key=lambda d: -d["time_us"])
