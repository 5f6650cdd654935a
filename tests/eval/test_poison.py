"""The poisoning (eval/candidate/poison.py). Layer 1: CPU tensors made by `empty*` factories under
`poisoned()` read as NaN; CUDA tensors are left to layer 2, whose choice of the allocator's free
blocks is tested here on snapshots and its fills on a GPU (tests/gpu/test_poison_graph.py)."""

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


def test_cpu_tensors_are_filled_when_made() -> None:
    assert poison.fills_at_allocation(torch.empty(4))


def test_no_fill_is_issued_where_layer_2_poisons(monkeypatch: pytest.MonkeyPatch) -> None:
    filled: list[torch.Size] = []
    monkeypatch.setattr(poison, "fill_poison", lambda t: filled.append(t.shape))
    monkeypatch.setattr(poison, "fills_at_allocation", lambda t: False)
    with poison.poisoned():
        torch.empty(16)
    assert filled == []
    monkeypatch.setattr(poison, "fills_at_allocation", lambda t: True)
    with poison.poisoned():
        torch.empty(16)
    assert filled == [torch.Size([16])]


def _segment(address: int, sizes_states: list[tuple[int, str]], **extra: object) -> dict:
    return {"device": 0, "address": address, "is_expandable": False, "segment_pool_id": (0, 0),
            "blocks": [{"size": n, "state": s} for n, s in sizes_states], **extra}


def test_free_blocks_are_the_inactive_ones_at_their_addresses() -> None:
    seg = _segment(4096, [(512, "active_allocated"), (1024, "inactive"), (512, "active_pending_free"),
                          (2048, "inactive")])
    assert poison.free_blocks([seg], 0) == [(4096 + 512, 1024), (4096 + 2048, 2048)]


def test_block_addresses_are_taken_where_the_snapshot_gives_them() -> None:
    seg = _segment(0, [(512, "inactive")])
    seg["blocks"][0]["address"] = 1 << 20
    assert poison.free_blocks([seg], 0) == [(1 << 20, 512)]


def test_graph_pools_expandable_segments_and_other_devices_are_left_alone() -> None:
    segs = [_segment(0, [(512, "inactive")], segment_pool_id=(1, 0)),
            _segment(8192, [(512, "inactive")], is_expandable=True),
            _segment(16384, [(512, "inactive")], device=1)]
    assert poison.free_blocks(segs, 0) == []
    assert poison.free_blocks(segs, 1) == [(16384, 512)]


def test_the_fill_byte_is_nan_in_every_float_dtype() -> None:
    raw = torch.full((8,), poison.POISON_BYTE, dtype=torch.uint8)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        assert torch.isnan(raw.view(dtype)).all(), dtype
