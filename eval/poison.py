"""Poisoned memory, so outputs a kernel never writes are caught instead of reading as zeros.

Two layers: (1) while the candidate runs under `poisoned()`, every tensor made by an `empty*`
factory is filled with NaN (integers with a sentinel) — this works on the CPU too, where fresh
pages from the OS are zeros; (2) on CUDA, the caching allocator's free blocks are filled with
NaN before the candidate runs, so buffers obtained any other way start out poisoned as well.

Neither reaches a CUDA graph's private memory: layer 1 skips tensors made during a capture
(`capturing_graph` says why), so a buffer a captured graph never writes keeps whatever that
memory held. Its outputs are still compared on every trial, against fresh and perturbed inputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.overrides import TorchFunctionMode

_EMPTY_FACTORIES = {torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty,
                    torch.Tensor.new_empty_strided}


def fill_poison(t: torch.Tensor) -> None:
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).min if t.dtype != torch.uint8 else 0xAB)


def capturing_graph(t: torch.Tensor) -> bool:
    """Is `t` a CUDA tensor made while the current stream records a CUDA graph? A fill issued then
    is not run but recorded: it would run on every replay of the candidate's graph, timed runs
    included, while timed plain calls carry none. (Session 34, H200: graph-replayed CNN candidates
    measured 15-20% slower by the judge than by the same protocol in one process.)"""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


class _PoisonEmpty(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if (func in _EMPTY_FACTORIES and isinstance(out, torch.Tensor) and out.numel()
                and not capturing_graph(out)):
            with torch.no_grad():
                fill_poison(out)
        return out


def poison_cuda_allocator(nbytes: int) -> None:
    """Fill roughly `nbytes` of the caching allocator's reusable blocks with NaN, then free them."""
    if not torch.cuda.is_available():
        return
    torch.cuda.synchronize()
    free, _ = torch.cuda.mem_get_info()
    big = min(max(nbytes, 1 << 20), int(free * 0.5)) // 4 * 4
    blocks = [torch.empty(big // 4, dtype=torch.float32, device="cuda")] if big > 0 else []
    # Small allocations (< 1 MiB) come from a separate pool of 2 MiB segments.
    blocks += [torch.empty(1 << 17, dtype=torch.float32, device="cuda") for _ in range(16)]
    for b in blocks:
        b.fill_(float("nan"))
    torch.cuda.synchronize()
    del blocks


@contextlib.contextmanager
def poisoned() -> Iterator[None]:
    with _PoisonEmpty():
        yield
