"""Row-major chunks of a tensor's elements, the same for every tensor of one shape whatever its
strides: the comparison walks an output, its float64 reference and PyTorch's fp32 result chunk by
chunk, so its temporaries are chunk-sized instead of output-sized.

A piece is `t[prefix][lo:hi]` (all of `t` when the whole fits): a contiguous range of the
row-major order starting at flat index `offset`. On a contiguous tensor it is a view; on a
strided one only the piece is copied.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Piece:
    prefix: tuple[int, ...]
    lo: int | None
    """None: the whole tensor (it fits in one chunk)."""
    hi: int
    offset: int
    """Flat row-major index of the piece's first element."""


def pieces(shape: torch.Size | tuple[int, ...], chunk: int) -> Iterator[Piece]:
    """Pieces of at most `chunk` elements covering a tensor of `shape` in row-major order."""
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 element, got {chunk}")
    shape = tuple(shape)
    n = math.prod(shape)
    if n == 0:
        return
    if n <= chunk:
        yield Piece((), None, 0, 0)
        return
    yield from _split((), shape, 0, chunk)


def _split(prefix: tuple[int, ...], dims: tuple[int, ...], offset: int, chunk: int) -> Iterator[Piece]:
    inner = math.prod(dims[1:])
    if inner > chunk:  # one slice along the first dim is still too big: split each one further
        for i in range(dims[0]):
            yield from _split(prefix + (i,), dims[1:], offset + i * inner, chunk)
        return
    step = max(1, chunk // inner)
    for lo in range(0, dims[0], step):
        yield Piece(prefix, lo, min(lo + step, dims[0]), offset + lo * inner)


def take(t: torch.Tensor, p: Piece) -> torch.Tensor:
    """The piece `p` of `t`, flat."""
    if p.lo is None:
        return t.reshape(-1)
    return t[p.prefix][p.lo:p.hi].reshape(-1)
