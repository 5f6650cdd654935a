"""The judge's copies of a forward's outputs are freed by reference counting alone.

A full gc runs only between stages; in the timing stage the judge rebuilds a copy of every timed
run's output (up to 200 runs). When rebuilding made a reference cycle, each copy lived until the
next full gc: on an H200 a 2 GB output ran the judge out of memory after ~60 runs."""

from __future__ import annotations

import gc
import weakref

import torch
from kernelskill.eval.candidate import contract


def _freed_without_gc(out_of: object) -> bool:
    leaves = [torch.randn(64), torch.randn(3, 5)]
    desc = contract.describe(out_of(leaves), [])
    refs = [weakref.ref(t) for t in leaves]
    rebuilt = contract.rebuild(desc, leaves)
    del leaves, rebuilt
    return all(r() is None for r in refs)


def test_rebuilt_outputs_are_freed_by_refcounting() -> None:
    gc.disable()
    try:
        assert _freed_without_gc(lambda ts: ts[0])
        assert _freed_without_gc(lambda ts: (ts[0], [ts[1], 2.5]))
    finally:
        gc.enable()


def test_rebuild_keeps_structure_and_leaf_order() -> None:
    a, b = torch.randn(2), torch.randn(3)
    desc = contract.describe((a, [b, 7, None]), [])
    out = contract.rebuild(desc, [b, a])
    assert isinstance(out, tuple) and isinstance(out[1], list)
    assert out[0] is b and out[1][0] is a and out[1][1] == 7 and out[1][2] is None
