"""The plane launchers (window and global pooling): their one runtime call and the stride arguments
(the plan cache is conv_pool.py's _cp_plan); kept apart from conv_pool.py because only those
launchers call it.

A plane launcher is data (families/conv_pool/plane_launch.py renders it): its kernel, its planner
(the grid rule, the argument list and the constexpr variants, computed on metadata) and the
planner's constants, passed to `_cp_run`. Pasted into a solution with such a launcher
(runtime.CP_PLANS), after runtime/common.py and runtime/conv_pool.py, whose helpers it calls.
"""

import torch

from .common import _launch
from .conv_pool import _cp_plan, _cp_strides


def _cp_run(plans, kern, planner, attrs, srcs, epis, dtype, *consts):
    """One call of a plane launcher: the cached plan of the layer attributes `attrs` (hashable)
    and the operands' metadata, made by planner(attrs, metas, n_src, *consts) -> (output shape,
    launch?, fill, source strides, epilogue strides, sizes, constexprs, grid, pick); the output
    allocated on the first source's device; then `kern` launched on (out, sources, their strides,
    epilogue operands, their strides, sizes), or, when the plan launches nothing, the output
    returned as is (empty) or filled with `fill` (a mean over no elements)."""
    key = (*attrs, *[m for t in (*srcs, *epis) for m in (t.shape, t.stride(), t.dtype, t.device)])
    shape, launch, fill, sargs, eargs, sizes, kw, grid, pick = _cp_plan(
        plans, key, len(attrs), planner, len(srcs), *consts)
    out = torch.empty(shape, device=srcs[0].device, dtype=dtype)
    if not launch:
        return out if fill is None else out.fill_(fill)
    _launch(kern, grid, pick, (out, *srcs, *sargs, *epis, *eargs, *sizes), kw)
    return out


def _cp_flat(ts, shape, dims, n):
    """The first n of each operand's _cp_strides over `shape`, flattened: kernel arguments."""
    return tuple(s for t in ts for s in _cp_strides(t, shape, dims)[:n])
