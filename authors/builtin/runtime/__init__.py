"""The runtime shipped into solution.py, and how it is pasted there.

Each module here is real Python that imports only torch, triton, math and its runtime siblings,
so ruff, tests and readers see it. A solution must stay one standalone file, so emitters do not
import these modules: they paste each one's source (`source`) once per file, without its
docstring and imports (the solution's header imports torch, triton, tl and math; the siblings'
helpers are pasted too). The constants below are those pasted sources, computed once at import.
"""

from __future__ import annotations

import ast
import inspect
from types import ModuleType

from . import (
    attention,
    attention_parts,
    common,
    conv_gemm,
    conv_layout,
    conv_parts,
    conv_pool,
    conv_tail,
    gemm,
    gemm_prep,
    graph_forward,
    graph_replay,
    guards,
    losses,
    norm_batch,
    norm_groups,
    norms,
    pool_global,
    pool_plans,
    pool_window,
    reductions,
    scan,
)


def source(module: ModuleType) -> str:
    """A runtime module's code as pasted into a solution: every top-level statement after its
    docstring and imports (with the comment right above the first), in file order (a leading
    newline keeps pasted blocks apart)."""
    text = inspect.getsource(module)
    body = [n for n in ast.parse(text).body
            if not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body:
        raise ValueError(f"{module.__name__} has no code to paste")
    lines = text.splitlines(keepends=True)
    first = min([body[0].lineno, *(d.lineno for d in getattr(body[0], "decorator_list", []))])
    while first > 1 and lines[first - 2].startswith("#"):  # the comment right above it goes too
        first -= 1
    return "\n" + "".join(lines[first - 1:])


COLLAPSE = source(common)
"""Host helpers every family's launchers call, `_TUNE` and `_bcast_off` (runtime/common.py)."""
SCAN_RUNTIME = source(scan)
"""The scan launchers' helpers (runtime/scan.py); they call COLLAPSE's."""
REDUCTIONS_RUNTIME = source(reductions)
"""Layouts, offsets and combine functions of reductions, softmax and losses (runtime/reductions.py)."""
LOSSES_RUNTIME = source(losses)
"""The cross-entropy combine functions (runtime/losses.py); they call REDUCTIONS_RUNTIME's."""
NORMS_RUNTIME = source(norms)
"""Layouts, plans and the two-level statistics of normalizations (runtime/norms.py)."""
NORM_BATCH = source(norm_batch)
"""Batch norm's planner (runtime/norm_batch.py); pasted after NORMS_RUNTIME where a batch norm is."""
NORM_GROUPS = source(norm_groups)
"""Group and instance norm's planner (runtime/norm_groups.py); pasted after NORMS_RUNTIME where one is."""
GEMM_RUNTIME = source(gemm)
"""The GEMM launchers' runtime call and planner, batch collapse, epilogue geometry (runtime/gemm.py)."""
GEMM_PREP = source(gemm_prep)
"""Operand preparation (hi / lo parts) for tensor-core GEMMs and its thresholds (runtime/gemm_prep.py)."""
CP_RUNTIME = source(conv_pool)
"""The convolution and pooling launchers' attribute, stride, chain and plane helpers and plan cache
(runtime/conv_pool.py)."""
CP_PLANS = source(pool_plans)
"""The plane launchers' plan cache (runtime/pool_plans.py); it calls COLLAPSE's and CP_RUNTIME's."""
POOL_WINDOW = source(pool_window)
"""The window-pooling launchers' plan (runtime/pool_window.py); it calls CP_PLANS' and theirs."""
POOL_GLOBAL = source(pool_global)
"""The global-pooling launchers' plan (runtime/pool_global.py); it calls CP_PLANS' and theirs."""
ATTENTION = source(attention)
"""The attention launchers' run and the kernel's score helper (runtime/attention.py); it calls COLLAPSE's."""
ATTENTION_PARTS = source(attention_parts)
"""Attention on fp16 parts (runtime/attention_parts.py); it calls ATTENTION's, COLLAPSE's and GEMM_PREP's."""
GRAPH_REPLAY = source(graph_replay)
"""CUDA-graph replay's helpers (runtime/graph_replay.py), pasted before ModelNew."""
GRAPH_FORWARD = source(graph_forward)
"""ModelNew.forward under CUDA-graph replay (runtime/graph_forward.py), pasted into the class indented."""
GUARDS = source(guards)
"""The guards of a partially captured forward's regions (runtime/guards.py)."""
CONV_GEMM = source(conv_gemm)
"""The implicit-GEMM convolution launchers' run and plan (runtime/conv_gemm.py); it calls CP_RUNTIME's."""
CONV_PARTS = source(conv_parts)
"""The implicit-GEMM convolutions' prepared operand parts (runtime/conv_parts.py); it calls GEMM_PREP's."""
CONV_LAYOUT = source(conv_layout)
"""The vendor-convolution launchers' run and plan (runtime/conv_layout.py); it calls CP_RUNTIME's."""
CONV_TAIL = source(conv_tail)
"""The NCHW vendor-convolution launcher's run and plan (runtime/conv_tail.py); it calls CP_RUNTIME's."""
