"""The launch-plan cache of the plane launchers (window and global pooling) and their stride
arguments; kept apart from conv_pool.py because only those launchers call it.

Pasted into a solution with such a launcher (runtime.CP_PLANS), after runtime/common.py and
runtime/conv_pool.py, whose helpers it calls.
"""

from .common import _meta_ops
from .conv_pool import _cp_strides


def _cp_plan(plans, key, n_args, planner, *consts):
    """The cached launch plan for `key`: the launcher's n_args plain arguments (layer attributes),
    then shape, stride(), dtype and device of each operand. A new key is planned once on meta
    tensors, planner(args, ops, *consts), so a plan depends on metadata and attributes only.
    The arguments must be hashable: launchers pass list-valued attributes as tuples (hashable_attr)."""
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = planner(key[:n_args], _meta_ops(key[n_args:]), *consts)
    return plan


def _cp_flat(ts, shape, dims, n):
    """The first n of each operand's _cp_strides over `shape`, flattened: kernel arguments."""
    return tuple(s for t in ts for s in _cp_strides(t, shape, dims)[:n])
