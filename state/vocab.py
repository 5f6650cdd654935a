"""The shared vocabulary: kernel structures, bottleneck classes and attempt outcomes.

Skills declare which structures and bottlenecks they address, the profiler labels what it saw
with the same words, and the built-in author tags the regions it emits. One list, so a typo in
a SKILL.md is a validation error instead of a skill that silently never matches.
"""

from __future__ import annotations

from typing import Literal, get_args

Structure = Literal[
    "elementwise",        # pointwise maps, broadcasts, activations
    "row-reduction",      # reduce over the innermost (contiguous) dim: softmax, norms, losses
    "column-reduction",   # reduce over a strided outer dim: batch norm statistics, sum(dim=0)
    "gemm",               # matmul, linear, bmm, matrix-vector
    "conv",               # convolutions of any dimensionality
    "conv-transpose",     # transposed convolutions
    "scan",               # prefix sums and products
    "pooling",            # max / average pooling windows
    "attention",          # softmax(QK^T)V blocks
    "normalization",      # layer / RMS / group / batch / instance / L2 norms
    "loss",               # reductions of a per-element loss to a scalar
    "recurrent",          # RNN / GRU / LSTM time loops
    "multi-kernel-graph", # a forward made of many launches (whole models)
]

Bottleneck = Literal[
    "memory-bound",        # DRAM traffic is the limiter: bytes moved / bandwidth dominates
    "compute-bound",       # an arithmetic pipe is the limiter
    "latency-bound",       # neither pipe nor memory busy: too little parallel work in flight
    "launch-bound",        # many short kernels and host gaps between them
    "occupancy-limited",   # registers / shared memory cap the resident warps
]

Outcome = Literal["static-reject", "compile-error", "runtime-error", "incorrect", "timeout", "correct"]

STRUCTURES: tuple[str, ...] = get_args(Structure)
BOTTLENECKS: tuple[str, ...] = get_args(Bottleneck)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
