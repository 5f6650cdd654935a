"""Counting the Triton kernels a candidate launches (compiled or interpreted).

The harness wraps Triton's launch entry points while the candidate runs and records which
`@triton.jit` functions ran; only functions defined in the candidate's own module count as
custom kernels (a candidate that merely calls torch.compile launches none of its own).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_launched: set[tuple[str, str]] = set()


def _wrap(cls: type) -> None:
    if getattr(cls.run, "_kernelskill_wrapped", False):
        return
    original = cls.run

    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202
        fn = getattr(self, "fn", None)
        if fn is not None:
            _launched.add((getattr(fn, "__module__", "") or "", getattr(fn, "__name__", "?")))
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
    return sorted(name for mod, name in seen if mod == module_name)
