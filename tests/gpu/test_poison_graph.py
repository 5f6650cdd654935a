"""On a GPU: the poisoning reaches what the judge's runs allocate and nothing else. Layer 1 issues
no fill on CUDA (none recorded into a CUDA graph captured under it, which replays run again on
every timed run); layer 2 fills the caching allocator's free blocks before each run, so a buffer
the forward takes from them reads as NaN, while live tensors and a graph's private pool keep their
values (eval/candidate/poison.py)."""

from __future__ import annotations

import pytest
import torch
from kernelskill.eval.candidate import poison

pytestmark = pytest.mark.gpu


def test_a_graph_captured_under_poisoning_replays_no_fill() -> None:
    x = torch.randn(1 << 20, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with poison.poisoned(), torch.cuda.graph(graph):
        y = torch.empty_like(x)  # a fill here would be recorded into the graph
        y[: x.numel() // 2] = x[: x.numel() // 2] * 2
    torch.cuda.synchronize()
    y[x.numel() // 2:] = 7.0  # the half the graph never writes
    poison.poison_cuda_allocator(0)  # the private pool is not the allocator's default pool
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y[: x.numel() // 2], x[: x.numel() // 2] * 2)
    assert (y[x.numel() // 2:] == 7.0).all()  # no recorded fill overwrote it with NaN


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [1 << 10, 3 << 20])  # the small pool and the large one
def test_a_buffer_from_the_poisoned_allocator_reads_as_nan(dtype: torch.dtype, n: int) -> None:
    live = torch.full((n,), 3.0, dtype=dtype, device="cuda")
    gone = torch.full((n,), 1.0, dtype=dtype, device="cuda")
    del gone  # its block goes back to the cache holding ones
    poison.poison_cuda_allocator(0)
    with poison.poisoned():
        y = torch.empty(n, dtype=dtype, device="cuda")
    torch.cuda.synchronize()
    assert torch.isnan(y).all()
    assert (live == 3.0).all()  # memory in use is never written


def test_layer_1_issues_no_fill_on_cuda() -> None:
    a = torch.full((1 << 16,), 5.0, device="cuda")
    ptr = a.data_ptr()
    del a
    with poison.poisoned():
        y = torch.empty(1 << 16, device="cuda")  # the same block, as the allocator hands it back
    torch.cuda.synchronize()
    assert y.data_ptr() == ptr and (y == 5.0).all()
