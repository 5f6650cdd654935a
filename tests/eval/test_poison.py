"""Layer 1 of the poisoning (eval/candidate/poison.py): `empty*` tensors made under `poisoned()` read as NaN,
except those made while a CUDA graph is being captured, where a fill would be recorded and run on
every replay (timed runs included). The capture itself needs a GPU: tests/gpu/test_poison_graph.py."""

from __future__ import annotations

import pytest
import torch
from kernelskill.eval.candidate import poison


def test_empty_tensors_are_poisoned() -> None:
    with poison.poisoned():
        f = torch.empty(64)
        i = torch.empty(8, dtype=torch.int32)
        like = torch.empty_like(f)
    assert torch.isnan(f).all() and torch.isnan(like).all()
    assert (i == torch.iinfo(torch.int32).min).all()


def test_cpu_tensors_are_never_in_a_capture() -> None:
    assert not poison.capturing_graph(torch.empty(4))


def test_no_fill_is_issued_while_a_graph_is_captured(monkeypatch: pytest.MonkeyPatch) -> None:
    filled: list[torch.Size] = []
    monkeypatch.setattr(poison, "fill_poison", lambda t: filled.append(t.shape))
    monkeypatch.setattr(poison, "capturing_graph", lambda t: True)
    with poison.poisoned():
        torch.empty(16)
    assert filled == []
    monkeypatch.setattr(poison, "capturing_graph", lambda t: False)
    with poison.poisoned():
        torch.empty(16)
    assert filled == [torch.Size([16])]
