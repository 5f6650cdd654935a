"""CUDA-graph replay's helpers (skills/cuda-graph-replay): which calls replay, the signature a
captured graph depends on, and the copies of its outputs.

Pasted into a solution whose forward is replayed (runtime.GRAPH_REPLAY), before ModelNew;
runtime/graph_forward.py is the forward that calls them.
"""

import torch

# Rationale: each call copies its inputs into the graph's static buffers and its outputs out of
# them, while replay saves the forward's host launch time (0.15-0.35 ms on one prepared GEMM, up
# to 1.7 ms on a transformer block). Single strict-fp32 GEMMs on an H200 under the timing protocol
# (session 16, plain -> replayed): 136 MB of inputs plus outputs 0.81 -> 0.67 ms, 169 MB 1.08 ->
# 0.85 ms, but 295 MB 0.67 -> 0.84 ms and 382 MB 0.80 -> 1.04 ms. Above this size the forward
# runs plainly.
_GRAPH_MAX_BYTES = 192 << 20


def _graph_small(tensors):
    """Inputs and outputs whose copies cost less than replay saves."""
    return sum(t.numel() * t.element_size() for t in tensors) <= _GRAPH_MAX_BYTES


def _graph_tensors(out):
    """The tensors in a forward's arguments or outputs (a tensor, or nested tuples, lists and dicts)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _graph_tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _graph_tensors(o)]
    return []


def _graph_ready(args):
    """Replay only CUDA tensors (and plain scalars) of moderate total size with autograd off: a
    captured graph records no autograd history, and the CPU has no graphs."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    plain = all(isinstance(a, (torch.Tensor, int, float, bool, str, type(None))) for a in args)
    return (plain and bool(tensors) and all(t.is_cuda for t in tensors) and not torch.is_grad_enabled()
            and _graph_small(tensors))


def _graph_signature(module, args):
    """What a captured graph depends on besides the weights: the inputs' shapes, strides, dtypes
    and devices, plain arguments' values, train / eval mode and the TF32 flags."""
    parts = [(tuple(a.shape), tuple(a.stride()), a.dtype, a.device) if isinstance(a, torch.Tensor)
             else (type(a).__name__, a) for a in args]
    flags = (module.training, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    return tuple(parts), flags


def _graph_clone(out):
    """A fresh copy of a replayed graph's outputs: the next replay overwrites the captured ones."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_graph_clone(o) for o in out)
    if isinstance(out, dict):
        return {k: _graph_clone(v) for k, v in out.items()}
    return out
