"""Guards of a partially captured forward: a straight-line region's kernels were built for the
values it saw while capturing; when a call brings others (a tensor of another shape, layout or dtype,
an integer the region baked in), the region's own PyTorch statements run instead."""

import torch


def _guard_fits(t, shape, stride, dtype):
    """`t` is a tensor laid out as the region's kernels expect."""
    return (isinstance(t, torch.Tensor) and t.dtype == dtype and tuple(t.shape) == shape
            and t.stride() == stride)


def _guard_is(v, expected):
    """`v` is the plain value (an int, bool, string, None or tuple of them) the region baked in."""
    if expected is None or isinstance(expected, bool):
        return v is expected
    return isinstance(v, type(expected)) and not isinstance(v, bool) and v == expected


def _guard_float(v):
    """`v` is a Python float: the region reads it at run time, as a kernel argument."""
    return isinstance(v, float)


def _guard_int(v):
    """`v` is a Python int (not a bool): the region reads it at run time, as an index or a factor."""
    return isinstance(v, int) and not isinstance(v, bool)
