"""On a GPU: a CUDA graph captured under the judge's poisoning mode replays no NaN fills. The
candidate process runs correctness trials under `poison.poisoned()`, and a candidate that captures
its forward on its first call (skills/cuda-graph-replay) did so there: each `torch.empty` inside
the capture recorded a fill, run again on every replay and timed as the candidate's work."""

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
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y[: x.numel() // 2], x[: x.numel() // 2] * 2)
    assert (y[x.numel() // 2:] == 7.0).all()  # no recorded fill overwrote it with NaN


def test_tensors_outside_a_capture_are_still_poisoned() -> None:
    with poison.poisoned():
        y = torch.empty(1 << 16, device="cuda")
    torch.cuda.synchronize()
    assert torch.isnan(y).all()
