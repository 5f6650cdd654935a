"""CUDA-graph replay of the whole forward: one graph launch instead of one launch per kernel.

A forward of many short kernels (small MLPs, RNN time loops, attention blocks at small batch)
is launch-bound: each kernel runs a few microseconds and the host needs ~5-10 us (more for
Triton's Python launcher) to issue the next one. The wrapper captures the forward once per
input signature into a `torch.cuda.CUDAGraph` and replays it on the current stream:
- the signature is what the captured work depends on besides the weights: each tensor
  argument's shape, strides, dtype and device, plain arguments' values, train / eval mode and
  the TF32 flags; never data pointers or call counts;
- static input buffers receive a copy of the caller's inputs on every call (so every call
  computes on its own inputs), and outputs are cloned (a caller keeping an output never sees
  it overwritten by the next replay);
- warm-up runs the eager forward once on the current stream before capture, so Triton
  compiles and autotunes, and cuBLAS / cuDNN initialise, outside the capture; the module's
  buffers (running statistics) are restored after it, so each call updates them once;
- CPU tensors, autograd-enabled calls, unusual arguments, and inputs plus outputs above 192 MB in
  total (whose copies cost more than replay saves) take the plain forward.
It works on any candidate (templated, or the verbatim forward when torch.fx cannot trace),
and declines sources that synchronise with the host inside forward (`.item()`, `.cpu()`,
`nonzero`, ...), which cannot be captured.
"""

from __future__ import annotations

import ast
import re

from kernelskill.authors.builtin.templates.api import EmitContext, Template

EAGER = "_eager_forward"
GRAPHS = "_cuda_graphs"

HELPERS = '''
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
'''

FORWARD = f'''
def forward(self, *args):
    # One graph launch per call instead of one launch per kernel (see _graph_signature).
    if not _graph_ready(args):
        return self.{EAGER}(*args)
    key = _graph_signature(self, args)
    entry = self.{GRAPHS}.get(key)
    if entry is False:  # outputs too large to copy out cheaply (see below)
        return self.{EAGER}(*args)
    if entry is None:
        static_in = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        # Warm-up on the current stream, outside the capture: Triton compiles and autotunes,
        # cuBLAS / cuDNN create their handles and workspaces.
        saved = [(b, b.clone()) for b in self.buffers()]
        warm = self.{EAGER}(*static_in)
        if not _graph_small(_graph_tensors((args, warm))):
            # Copying these outputs out of a graph on every call would cost about what replay
            # saves: this signature runs plainly from now on, and the warm-up was this call.
            self.{GRAPHS}[key] = False
            return warm
        # Buffers the warm-up updated (a training-mode norm's running statistics) are put back,
        # so a call updates them once, as eager does.
        for b, v in saved:
            b.copy_(v)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self.{EAGER}(*static_in)
        entry = (graph, static_in, static_out)
        self.{GRAPHS}[key] = entry
    graph, static_in, static_out = entry
    for dst, src in zip(static_in, args):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
    graph.replay()
    return _graph_clone(static_out)
'''

# Host synchronisation (or data-dependent shapes) inside forward cannot be captured.
_SYNCS = re.compile(r"\.(item|tolist|cpu|numpy|nonzero|masked_select|unique|unique_consecutive)\s*\("
                    r"|torch\.(nonzero|masked_select|unique|argwhere)\s*\(|cuda\.synchronize|\.to\(\s*['\"]cpu"
                    r"|torch\.cuda\.graph|CUDAGraph")


def wrap_source(source: str) -> str | None:
    """The candidate with ModelNew.forward replayed as a CUDA graph, or None when it does not apply."""
    tree = ast.parse(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    if cls is None or _SYNCS.search(source) or re.search(rf"\b({EAGER}|{GRAPHS}|_graph_ready)\b", source):
        return None
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    fwd, init = methods.get("forward"), methods.get("__init__")
    if fwd is None or fwd.args.kwonlyargs or fwd.args.kwarg or fwd.decorator_list:
        return None
    lines = source.splitlines()
    pad = " " * (cls.col_offset + 4)
    # (insert before this 0-based line, order among inserts at the same line, lines)
    edits: list[tuple[int, int, list[str]]] = []
    if init is not None:
        body_pad = " " * init.body[0].col_offset
        edits.append((init.end_lineno, 1, [f"{body_pad}self.{GRAPHS} = {{}}  # input signature -> (graph, "
                                        "static inputs, static outputs)"]))
    else:
        edits.append((cls.body[0].lineno - 1, 1, [f"{pad}def __init__(self):", f"{pad}    super().__init__()",
                                               f"{pad}    self.{GRAPHS} = {{}}", ""]))
    method = [pad + ln if ln else ln for ln in FORWARD.strip("\n").splitlines()]
    edits.append((cls.end_lineno, 0, ["", *method]))
    start = min([cls.lineno, *(d.lineno for d in cls.decorator_list)]) - 1
    edits.append((start, 0, HELPERS.strip("\n").splitlines() + ["", ""]))
    line = lines[fwd.lineno - 1]
    lines[fwd.lineno - 1] = line.replace("def forward(", f"def {EAGER}(", 1)
    for at, _, new in sorted(edits, key=lambda e: (-e[0], e[1])):
        lines[at:at] = new
    out = "\n".join(lines) + "\n"
    ast.parse(out)
    return out


class CudaGraphReplay(Template):
    kinds = ("program",)
    default = False  # the planner applies it to launch-bound profiles

    def wrap(self, source: str, ctx: EmitContext) -> str | None:
        return wrap_source(source)


TEMPLATE = CudaGraphReplay()
