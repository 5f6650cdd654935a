"""Poisoned memory, so outputs a kernel never writes are caught instead of reading as zeros.

Two layers, each for the device where it is free of the timed region:
(1) on the CPU, while the candidate runs under `poisoned()`, every tensor made by an `empty*`
factory is filled with NaN (integers with a sentinel): fresh pages from the OS are zeros, and a
CPU forward is timed by the judge's wall clock, less these fills (eval/judge/remote_timing.py);
(2) on CUDA, before every run, every free block of the caching allocator's default pool is filled
with 0xFF bytes (NaN in every floating dtype, -1 in the signed integer ones), with the device idle
and outside the timed region, so any buffer the forward obtains from the allocator starts out
poisoned (EVALUATION.md: "the device allocator is poisoned before candidate runs").

Rationale for not filling CUDA tensors at allocation: a fill there is device work inside the timed
forward, a full write of every temporary, which the judge can bound but not verify (the clock that
times it is in the candidate's process). Judged, a CNN candidate with 100-300 MB temporaries ran
2.0-2.5 ms where the same forward took 0.94 ms in one process, and 1.55 ms there with the fills
(H100, 2026-12-06, problems/measurements/h100-2026-12-06-judge-gap/). What layer 2 does not reach:
a block freed and allocated again within one forward (it holds that forward's own data, computed
from this run's inputs), memory the allocator newly maps during a forward, expandable segments,
and private pools (a CUDA graph's, a `MemPool`). Outputs are still compared on every trial and on
sampled timed runs, against fresh and perturbed inputs.

Both layers run on every forward the judge asks for, checked or timed alike (a candidate that
probes `torch.empty` for NaN learns nothing about which runs are checked).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch


def fill_poison(t: torch.Tensor) -> None:
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).min if t.dtype != torch.uint8 else 0xAB)


def fills_at_allocation(t: torch.Tensor) -> bool:
    """Does layer 1 fill `t` when it is made? Not on CUDA, where layer 2 poisoned the allocator's free
    blocks before the run: a fill at allocation would be timed as the candidate's work, and one
    issued while a CUDA graph is captured would run again on every replay."""
    return not t.is_cuda


class FillClock:
    """The host time layer 1's fills take inside one forward (layer 1 fills CPU tensors only).
    The judge takes it out of a CPU run's time, up to a bound of its own; a CUDA run's events do
    not wait on host work, and nothing is taken out of them (eval/judge/remote_timing.py)."""

    def __init__(self) -> None:
        self.host_ms = 0.0

    @contextlib.contextmanager
    def fill(self) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.host_ms += (time.perf_counter() - t0) * 1e3

    def ms(self) -> float:
        return self.host_ms


_FACTORIES = ((torch, "empty"), (torch, "empty_like"), (torch, "empty_strided"),
              (torch.Tensor, "new_empty"), (torch.Tensor, "new_empty_strided"))
_active: list[FillClock | None] = []
"""The clocks of the `poisoned()` blocks now open, innermost last: the factories fill only then."""
_installed: list[bool] = []


def _poisoning(factory: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(factory)
    def made(*args: Any, **kwargs: Any) -> Any:
        out = factory(*args, **kwargs)
        if _active and isinstance(out, torch.Tensor) and out.numel() and fills_at_allocation(out):
            # Not timed while dynamo traces (a candidate's torch.compile): the fill is then part of
            # the compiled graph, and a clock read there would break the graph.
            clock = _active[-1]
            timed = clock is not None and not torch.compiler.is_compiling()
            with torch.no_grad(), clock.fill() if timed else contextlib.nullcontext():
                fill_poison(out)
        return out

    return made


def install() -> None:
    """Wrap the `empty*` factories, once per process, before any candidate code is imported (the
    candidate process calls it before its integrity snapshot, which then watches the wrappers).
    Rationale: a torch function mode around the forward (this layer's first form) ran a Python
    call for every tensor method the forward used (`x.stride()`, `x.data_ptr()` in every kernel
    launch): 2.0 us against 0.15 us per call on a CPU host, work counted as the candidate's and
    eager's time. The wrappers cost only where an `empty*` factory is called."""
    if _installed:
        return
    _installed.append(True)
    for owner, name in _FACTORIES:
        setattr(owner, name, _poisoning(getattr(owner, name)))


POISON_BYTE = 0xFF
"""Layer 2's fill: NaN in float16, bfloat16, float32, float64 and both float8 formats alike, where
a float32 NaN pattern reads as half zeros in a 16-bit tensor."""
DEFAULT_POOL = (0, 0)
"""The caching allocator's id of its default pool; a CUDA graph's private pool has another."""


def free_blocks(segments: list[dict[str, Any]], device: int) -> list[tuple[int, int]]:
    """(address, bytes) of each free block in the default pool of `device`, from the caching
    allocator's snapshot (`torch.cuda.memory_snapshot()`). Skipped: blocks in use or waiting on
    a stream, a CUDA graph's private pool, and expandable segments (whose address range is not
    all mapped)."""
    spans = []
    for seg in segments:
        if (seg.get("device") != device or seg.get("is_expandable")
                or tuple(seg.get("segment_pool_id", DEFAULT_POOL)) != DEFAULT_POOL):
            continue
        addr = int(seg["address"])
        for block in seg["blocks"]:
            addr = int(block.get("address", addr))  # older snapshots list sizes only, in order
            if block["state"] == "inactive":
                spans.append((addr, int(block["size"])))
            addr += int(block["size"])
    return spans


class _Span:
    """A device address range as a CUDA array, so `torch.as_tensor` views it without owning it."""

    def __init__(self, addr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (addr, False),
                                         "version": 3}


def poison_cuda_allocator(nbytes: int) -> None:
    """Layer 2, with the device idle: grow the cache by about `nbytes` (twice the inputs: a
    forward's first allocations then come from it rather than from memory newly mapped, which
    reads as zeros), then fill every free block of the default pool with POISON_BYTE."""
    if not torch.cuda.is_available():
        return
    torch.cuda.synchronize()
    free, _ = torch.cuda.mem_get_info()
    big = min(max(nbytes, 1 << 20), int(free * 0.5))
    blocks = [torch.empty(big, dtype=torch.uint8, device="cuda")] if big > 0 else []
    # Small allocations (< 1 MiB) come from a separate pool of 2 MiB segments.
    blocks += [torch.empty(1 << 19, dtype=torch.uint8, device="cuda") for _ in range(16)]
    del blocks
    for addr, size in free_blocks(torch.cuda.memory_snapshot(), torch.cuda.current_device()):
        torch.as_tensor(_Span(addr, size), device="cuda").fill_(POISON_BYTE)
    torch.cuda.synchronize()


class ModeLeak(Exception):
    """Code run under `poisoned()` left a torch function or dispatch mode active: a mode that stays
    on the stack sees every later torch call of the evaluator (the copy of the output into the
    judge's slots among them), where it could do work the timed region never saw."""


def mode_depths() -> tuple[int, int]:
    """(torch function modes, torch dispatch modes) active now."""
    return torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()


@contextlib.contextmanager
def poisoned(clock: FillClock | None = None) -> Iterator[None]:
    """Layer 1 around the block. Raises ModeLeak when the block leaves a torch function or
    dispatch mode on the stack (popped here, so the stacks are as they were either way)."""
    install()
    depths = mode_depths()
    _active.append(clock)
    try:
        yield
    finally:
        _active.pop()
    leaked = mode_depths() != depths
    while leaked and torch._C._len_torch_function_stack() > depths[0]:
        torch._C._pop_torch_function_stack()
    while leaked and torch._C._len_torch_dispatch_stack() > depths[1]:
        torch._C._pop_torch_dispatch_stack()
    if leaked:
        raise ModeLeak("forward left a torch function or dispatch mode active after it returned: "
                       "work the evaluator's later calls (the copy of the output) would run")
