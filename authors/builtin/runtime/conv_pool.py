"""Launcher-side helpers shared by the convolution and pooling launchers of a generated file:
layer attributes as tuples, strides by coordinate, a fused chain's arguments, plane counts, and
the launch-plan cache of the launchers that make one runtime call.

Pasted into a solution with a convolution or pooling launcher (runtime.CP_RUNTIME), after
runtime/common.py, whose helpers it calls.
"""

from .common import _merge_run, _meta_ops


def _cp_tup(v, n):
    """A layer attribute (an int or a 1- or n-tuple) as an n-tuple of ints."""
    if isinstance(v, (tuple, list)):
        v = tuple(int(x) for x in v)
        return v * n if len(v) == 1 else v
    return (int(v),) * n


def _cp_pad3(v, dims, fill):
    """An n-tuple (n = dims <= 3) left-padded with `fill` to (d, h, w)."""
    return (fill,) * (3 - dims) + tuple(v)


def _cp_strides(t, shape, dims):
    """Strides of `t` broadcast over `shape` (lead dims, then `dims` spatial dims) as
    (n, c, d, h, w, j): lead dims right-aligned into (n, c), spatial dims into (d, h, w), and j the
    stride of the flattened spatial index when the spatial dims collapse into one run, else -1."""
    st = list(t.expand(shape).stride())
    lead = len(shape) - dims
    ls = [0] * (2 - lead) + st[:lead]
    sizes = [1] * (3 - dims) + list(shape[lead:])
    sp = [0] * (3 - dims) + st[lead:]
    run = _merge_run(sizes, sp)
    return (*ls, *sp, -1 if run is None else run[1])


def _cp_planes(shape, dims):
    """(N, C, (D, H, W)) of a (lead..., spatial...) shape: lead dims are batch and channel."""
    lead = len(shape) - dims
    n = shape[0] if lead == 2 else 1
    c = shape[lead - 1] if lead >= 1 else 1
    return n, c, _cp_pad3(shape[lead:], dims, 1)


def _cp_chain(ops, shape, dims):
    """A coordinate-addressed fused chain's kernel arguments (families/conv_pool/common.PlaneChain):
    its operands, then the six _cp_strides of each over `shape`; and whether an operand's spatial
    dims do not collapse into one run (the kernel's SPLIT)."""
    st = [_cp_strides(t, shape, dims) for t in ops]
    return [*ops, *[s for t in st for s in t]], any(t[5] < 0 for t in st)


def _cp_plan(plans, key, n_args, planner, *consts):
    """The cached launch plan for `key`: the launcher's n_args plain arguments (layer attributes),
    then shape, stride(), dtype and device of each operand. A new key is planned once on meta
    tensors, planner(args, ops, *consts), so a plan depends on metadata and attributes only.
    The arguments must be hashable: launchers pass list-valued attributes as tuples (hashable_attr)."""
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = planner(key[:n_args], _meta_ops(key[n_args:]), *consts)
    return plan
