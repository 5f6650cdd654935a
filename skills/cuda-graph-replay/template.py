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
- the first call of a signature times plain calls against replays and keeps replay only where
  it wins by 3% (the copies cost more than replay saves on forwards that are not launch-bound);
  the buffers and random-number state its trial runs touched are restored;
- CPU tensors, autograd-enabled calls, unusual arguments, and inputs plus outputs above 192 MB in
  total (never captured or timed) take the plain forward.
It works on any candidate (templated, or the verbatim forward when torch.fx cannot trace),
and declines sources that synchronise with the host inside forward (`.item()`, `.cpu()`,
`nonzero`, ...), which cannot be captured.
"""

from __future__ import annotations

import ast
import re

from kernelskill.authors.builtin.templates.api import GRAPH_FORWARD, GRAPH_REPLAY, EmitContext, Template

# The names runtime/graph_forward.py (GRAPH_FORWARD) calls the renamed forward and the graphs by.
EAGER = "_eager_forward"
GRAPHS = "_cuda_graphs"

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
    method = [pad + ln if ln else ln for ln in GRAPH_FORWARD.strip("\n").splitlines()]
    edits.append((cls.end_lineno, 0, ["", *method]))
    start = min([cls.lineno, *(d.lineno for d in cls.decorator_list)]) - 1
    edits.append((start, 0, GRAPH_REPLAY.strip("\n").splitlines() + ["", ""]))
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
