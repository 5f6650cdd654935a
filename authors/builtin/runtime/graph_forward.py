"""ModelNew.forward under CUDA-graph replay (skills/cuda-graph-replay): the candidate's own forward
is renamed `_eager_forward`, `__init__` sets `self._cuda_graphs = {}`, and this function is pasted
into the class as its `forward` (runtime.GRAPH_FORWARD, indented), after runtime/graph_replay.py's
helpers at module level.
"""

import torch

from .graph_replay import _graph_clone, _graph_ready, _graph_signature, _graph_small, _graph_tensors


def forward(self, *args):
    # One graph launch per call instead of one launch per kernel (see _graph_signature).
    if not _graph_ready(args):
        return self._eager_forward(*args)
    key = _graph_signature(self, args)
    entry = self._cuda_graphs.get(key)
    if entry is False:  # outputs too large to copy out cheaply (see below)
        return self._eager_forward(*args)
    if entry is None:
        static_in = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        # Warm-up on the current stream, outside the capture: Triton compiles and autotunes,
        # cuBLAS / cuDNN create their handles and workspaces.
        saved = [(b, b.clone()) for b in self.buffers()]
        warm = self._eager_forward(*static_in)
        if not _graph_small(_graph_tensors((args, warm))):
            # Copying these outputs out of a graph on every call would cost about what replay
            # saves: this signature runs plainly from now on, and the warm-up was this call.
            self._cuda_graphs[key] = False
            return warm
        # Buffers the warm-up updated (a training-mode norm's running statistics) are put back,
        # so a call updates them once, as eager does.
        for b, v in saved:
            b.copy_(v)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self._eager_forward(*static_in)
        entry = (graph, static_in, static_out)
        self._cuda_graphs[key] = entry
    graph, static_in, static_out = entry
    for dst, src in zip(static_in, args, strict=True):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
    graph.replay()
    return _graph_clone(static_out)
