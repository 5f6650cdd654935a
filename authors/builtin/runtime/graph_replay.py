"""CUDA-graph replay's helpers (skills/cuda-graph-replay): which calls may replay, the signature a
captured graph depends on, the timing that decides whether a signature replays, and a replayed
call (input copies, replay, output clones).

Replay saves host launch time only; each replayed call pays a device copy of its inputs and a
clone of its outputs. Where the forward is not launch-bound the copies are a net loss, so the
first call of a signature times both ways and keeps the faster (see _GRAPH_MAX_BYTES).

Pasted into a solution whose forward is replayed (runtime.GRAPH_REPLAY), before ModelNew;
runtime/graph_forward.py is the forward that calls them. Only torch is used: the wrapper also
wraps candidates whose header imports nothing else.
"""

import torch

# Rationale: each replayed call copies its inputs into the graph's static buffers and its outputs
# out of them, while replay saves the forward's host launch time (0.15-0.35 ms on one prepared
# GEMM, up to 1.7 ms on a transformer block). The saving depends on how launch-bound the forward
# is, not on its size: on an H200 a conv forward (0.4 ms conv plus two 70-140 us passes, 134 MB
# input) paid an extra 66 us input copy per replayed call and saved nothing. So the first call of
# a signature times plain calls against replays (_graph_faster) and keeps the faster. This size
# stays as a cheap upper gate, above which nothing is captured or timed: on single strict-fp32
# GEMMs (H200, 2026-11-30, problems/measurements/h200-2026-11-30-graph-replay/, protocol, plain ->
# replayed) 136 MB of inputs plus outputs went 0.81 -> 0.67 ms and 169 MB 1.08 -> 0.85 ms, but 295 MB
# 0.67 -> 0.84 ms and 382 MB 0.80 -> 1.04 ms, and a first-call timing alone once chose replay on those
# two.
_GRAPH_MAX_BYTES = 192 << 20
# Replay must beat plain calls by this fraction (it also holds the graph's memory), and the best
# of this many timed calls per way decides; one untimed call of each goes first.
_GRAPH_MARGIN = 0.03
_GRAPH_REPS = 3


def _graph_small(tensors):
    """Inputs and outputs small enough that replay may pay: larger ones are never captured."""
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


def _graph_devices(args):
    """The devices of a call's tensors: whose random-number state its trial runs draw from."""
    return sorted({a.device.index for a in args if isinstance(a, torch.Tensor)})


def _graph_event_ms(fn):
    """One call of `fn` as the judge times it: from an idle device (so the host's launch time shows
    as device idle time between the events) to the end of its work. (The host clock's module is
    outside what a solution may import; these events count the same launch time.)"""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _graph_faster(plain, replay, clock=_graph_event_ms, reps=_GRAPH_REPS):
    """Whether `replay` beats `plain` by _GRAPH_MARGIN: each way's best of `reps` calls timed by
    `clock(fn)`, after one untimed call of each (first-call costs), alternating the ways so that
    drift in clocks or load hits both."""
    best = [float("inf")] * 2
    for r in range(reps + 1):
        for i, fn in enumerate((plain, replay)):
            t = clock(fn)
            if r:
                best[i] = min(best[i], t)
    return best[1] < best[0] * (1 - _GRAPH_MARGIN)


def _graph_run(entry, args):
    """One replayed call: the caller's inputs copied into the graph's static ones (every replay
    computes on its own inputs), the graph replayed, its outputs cloned."""
    graph, static_in, static_out = entry
    for dst, src in zip(static_in, args, strict=True):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
    graph.replay()
    return _graph_clone(static_out)


def _graph_clone(out):
    """A fresh copy of a replayed graph's outputs: the next replay overwrites the captured ones."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_graph_clone(o) for o in out)
    if isinstance(out, dict):
        return {k: _graph_clone(v) for k, v in out.items()}
    return out
