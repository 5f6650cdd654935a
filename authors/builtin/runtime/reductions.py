"""Helpers every generated reduction / softmax / loss file shares.

Launcher side: `_red_layout` views the reduced space of any (broadcast, strided) operands as
O x K x I -- output index `o * I + i`, reduced index `k` -- with each of O, K, I at most two
collapsed dims per operand, so kernels address views and broadcasts without copies;
common.py's `_i64` decides their offset width. Kernel side: `_red_off` (offset of a two-dim
group) and the associative combine functions of the reducers, used both across the lanes of a
tile (`tl.reduce`) and across the partials of a split reduction.

Pasted whole into a solution with a reduction, softmax or loss (runtime.REDUCTIONS_RUNTIME),
after runtime/common.py, whose helpers it calls.
"""

import triton
import triton.language as tl

from .common import _merge_dims


def _red_groups(shape, groups, strides):
    """Collapse each group of logical dims (common.py's _merge_dims) to at most two dims.
    Returns [(total, inner size, two dims?)] per group and, per tensor, [outer stride, inner
    stride] per group; None if a group needs more."""
    sizes, out = [], [[] for _ in strides]
    for g in groups:
        sz, st = _merge_dims([shape[d] for d in g], [[s[d] for d in g] for s in strides])
        if len(sz) > 2:
            return None
        total = 1
        for n in sz:
            total *= n
        sizes.append((total, sz[-1] if sz else 1, len(sz) == 2))
        for t, s in enumerate(st):
            out[t] += [0] * (2 - len(s)) + s
    return sizes, out


def _red_layout(shape, dims, tensors):
    """Operands broadcast over `shape`, reduced over `dims` (sorted), as (tensors, O, K, I,
    strides, swapped): O/K/I are (total, inner size, two dims?), strides[t] is [o0, o1, k0, k1,
    i0, i1], and swapped says the kept dims were moved from O to I (see below).
    The output is contiguous in the kept dims' order: index o * I + i. Views that do not fit two
    dims per group are materialised (rare: e.g. reducing dims 0, 2 and 4 of a 5-D tensor)."""
    nd = len(shape)
    kept = [d for d in range(nd) if d not in dims]
    if dims == list(range(dims[0], dims[-1] + 1)):
        groups = [list(range(dims[0])), list(dims), list(range(dims[-1] + 1, nd))]
    else:
        groups = [kept, list(dims), []]
    lay = _red_groups(shape, groups, [list(t.expand(shape).stride()) for t in tensors])
    if lay is None:
        tensors = [t.expand(shape).contiguous() for t in tensors]
        lay = _red_groups(shape, groups, [list(t.stride()) for t in tensors])
    if lay is None:
        perm = kept + list(dims)
        tensors = [t.expand(shape).permute(perm).contiguous() for t in tensors]
        shape = [shape[d] for d in perm]
        groups = [list(range(len(kept))), list(range(len(kept), nd)), []]
        lay = _red_groups(shape, groups, [list(t.stride()) for t in tensors])
    (o, k, i), strides = lay
    swapped = i[0] == 1
    if swapped:
        # Nothing after the reduced dims: the kept dims play the role of I (o = 0), so a kernel
        # walking I with unit stride covers column reductions such as x.sum(0) and x.t().sum(1).
        o, i = (1, 1, False), o
        strides = [[0, 0, s[2], s[3], s[0], s[1]] for s in strides]
    return tensors, o, k, i, strides, swapped


def _red_align(*strides):
    """Largest power of two (at most 16) dividing every non-zero stride: what a kernel may assume
    (tl.multiple_of) about offsets built from them."""
    a = 16
    for s in strides:
        while s and s % a:
            a //= 2
    return a


@triton.jit
def _red_off(idx, D1, s0, s1, TWO: tl.constexpr):
    """Element offset of index `idx` in a group of one dim (stride s1) or two dims (inner size
    D1, strides s0, s1)."""
    if TWO:  # noqa: SIM108 (unchanged text keeps Triton's cache keys of its callers)
        off = (idx // D1) * s0 + (idx % D1) * s1
    else:
        off = idx * s1
    return off


@triton.jit
def _red_hint(n, A: tl.constexpr):
    """n, which the launcher checked is a multiple of A, rebuilt as (n // A) * A: the compiler then
    knows its divisibility (a hint on a kernel argument itself is dropped), so masks against it
    stay uniform over vector loads."""
    if A > 1:
        n = (n // A) * A
    return n


@triton.jit
def _red_add(a, b):
    return a + b


@triton.jit
def _red_mul(a, b):
    return a * b


@triton.jit
def _red_max(a, b):
    # NaN wins, as in torch.amax / torch.max.
    return tl.where((b > a) | (b != b), b, a)


@triton.jit
def _red_min(a, b):
    return tl.where((b < a) | (b != b), b, a)


@triton.jit
def _red_argmax(v1, i1, v2, i2):
    # The larger value; NaN counts as the largest; ties keep the first index (PyTorch's rule).
    take = (v2 > v1) | ((v2 != v2) & (v1 == v1)) | (((v2 == v1) | ((v1 != v1) & (v2 != v2))) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def _red_argmin(v1, i1, v2, i2):
    take = (v2 < v1) | ((v2 != v2) & (v1 == v1)) | (((v2 == v1) | ((v1 != v1) & (v2 != v2))) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def _red_lse(m1, s1, m2, s2):
    # (running max, sum of exp(x - shift)); the shift is the max, or 0 when the max is infinite
    # (torch.logsumexp's rule: +inf stays +inf, a row of -inf gives -inf, no inf - inf NaN).
    # The shift is finite: a state of -inf contributes s * 0, and a NaN sum propagates.
    m = tl.maximum(m1, m2)
    sh = tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)
    return m, s1 * tl.exp(m1 - sh) + s2 * tl.exp(m2 - sh)


@triton.jit
def _red_lse_shift(m):
    return tl.where((m == float("inf")) | (m == -float("inf")), 0.0, m)


@triton.jit
def _red_welford(n1, mean1, q1, n2, mean2, q2):
    # Chan et al.'s parallel update of (count, mean, sum of squared deviations).
    n = n1 + n2
    w = tl.where(n == 0, 0.0, n2 / tl.where(n == 0, 1.0, n))
    d = mean2 - mean1
    return n, mean1 + d * w, q1 + q2 + d * d * n1 * w
