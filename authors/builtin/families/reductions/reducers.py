"""Reducers: what a reduction keeps per lane and per row, as Triton source snippets.

A reducer is a monoid over a small state tuple: an element state per loaded value, an
associative `combine` (a jit helper of runtime/reductions or SHARED below) used for lane updates,
for the cross-lane `tl.reduce` and for merging split partials, and a `finalize` turning a row's
state into results. The code generator (families/reductions/codegen) owns loops, masks and stores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...frontend.ir import Op
from ..pointwise.codegen import TRITON, _f

NEG_INF, POS_INF = "float('-inf')", "float('inf')"


@dataclass
class Gen:
    """What a reducer's snippets may refer to inside a kernel."""

    vals: list[str]
    """Tile variables of the reduced values (the main value first, then other tile operands)."""
    mask: str = "mask"
    kidx: str = "ks"
    """Reduced index of each tile element (broadcastable to the tile)."""
    shape: str = "[BLOCK_M, BLOCK_K]"


@dataclass
class Reducer:
    combine: str = "_red_add"
    inits: list[str] = field(default_factory=lambda: ["0.0"])
    """Lane initial state (also the element state of masked lanes)."""
    index_states: tuple[int, ...] = ()
    """States holding element indices (int32 lanes, or int64 when indexing in int64)."""
    results: tuple[str, ...] = ("value",)
    splittable: bool = True
    welford: bool = False
    elem_fn: object = None
    fin_fn: object = None
    lanes_fn: object = None
    """Custom cross-lane reduction: (states, outs, axis) -> statements."""
    online_lse: bool = False
    """States 0, 1 are a running (max, sum of exp) of the main value, any others plain sums."""

    def elems(self, g: Gen) -> list[str]:
        return self.elem_fn(g)

    def update(self, g: Gen, st: list[str]) -> list[str]:
        """Lane update statements: state = combine(state, element) on unmasked lanes."""
        if self.online_lse:
            return lse_update(g, st, self.elems(g)[2:])
        if self.welford:
            # One element per unmasked lane per iteration: all counts equal the iteration number,
            # so the Welford update needs one scalar reciprocal instead of a division per element.
            v = g.vals[0]
            n, mean, q = st
            return ["rcp = 1.0 / it1",
                    f"dlt = {v} - {mean}",
                    f"{mean} = tl.where({g.mask}, {mean} + dlt * rcp, {mean})",
                    f"{q} = tl.where({g.mask}, {q} + dlt * ({v} - {mean}), {q})",
                    f"{n} = tl.where({g.mask}, it1, {n})"]
        es = self.elems(g)
        lines = [f"el{j} = tl.where({g.mask}, {e}, {self.inits[j] if j not in self.index_states else 'big'})"
                 for j, e in enumerate(es)]
        if self.combine == "_red_add":
            return lines + [f"{s} += el{j}" for j, s in enumerate(st)]
        lhs = ", ".join(st)
        return lines + [f"{lhs} = {self.combine}({lhs}, {', '.join(f'el{j}' for j in range(len(st)))})"]

    def cross_lanes(self, st: list[str], out: list[str], axis: int) -> list[str]:
        """Row states from lane states. Built-in tl.sum / tl.max / tl.min reductions where the
        combine allows (a custom-combine tl.reduce is slow under the CPU interpreter)."""
        a = axis
        if self.lanes_fn is not None:
            return self.lanes_fn(st, out, axis)
        if self.combine == "_red_add":
            return [f"{o} = tl.sum({s}, axis={a})" for o, s in zip(out, st, strict=True)]
        if self.combine in ("_red_max", "_red_min"):
            op = "max" if self.combine == "_red_max" else "min"
            s, o = st[0], out[0]
            return [f"{o} = tl.{op}({s}, axis={a})",  # NaN propagates, as in PyTorch
                    f"{o} = tl.where(tl.max(tl.where({s} != {s}, 1, 0), axis={a}) > 0, float('nan'), {o})"]
        if self.combine in ("_red_argmax", "_red_argmin"):
            # The best value (NaN if a lane holds one), then the first index holding it.
            v, i = st
            op = "max" if self.combine == "_red_argmax" else "min"
            return [f"lnan = {v} != {v}",
                    f"anynan = tl.max(tl.where(lnan, 1, 0), axis={a}) > 0",
                    f"best = tl.{op}(tl.where(lnan, 0.0, {v}), axis={a})",
                    f"hit = tl.where(tl.expand_dims(anynan, {a}), lnan, {v} == tl.expand_dims(best, {a}))",
                    f"{out[1]} = tl.min(tl.where(hit, {i}, big), axis={a})",
                    f"{out[0]} = tl.where(anynan, float('nan'), best)"]
        if self.combine == "_red_lse":
            m, s = st
            return [f"{out[0]} = tl.max({m}, axis={a})",
                    f"lsh = tl.expand_dims(_red_lse_shift({out[0]}), {a})",
                    # the shift is finite, so lanes of -inf add 0 * 0 and NaN sums propagate
                    f"{out[1]} = tl.sum({s} * tl.exp({m} - lsh), axis={a})"]
        if self.combine == "_red_welford":
            n, mean, q = st
            return [f"{out[0]} = tl.sum({n}, axis={a})",
                    f"{out[1]} = tl.sum({n} * {mean}, axis={a}) / tl.where({out[0]} == 0, 1.0, {out[0]})",
                    f"wd = {mean} - tl.expand_dims({out[1]}, {a})",
                    f"{out[2]} = tl.sum({q} + {n} * wd * wd, axis={a})"]
        if len(st) == 1:
            return [f"{out[0]} = tl.reduce({st[0]}, {axis}, {self.combine})"]
        return [f"{', '.join(out)} = tl.reduce(({', '.join(st)}), {axis}, {self.combine})"]

    def merge(self, st: list[str], other: list[str]) -> list[str]:
        if self.combine == "_red_add":
            return [f"{s} += {o}" for s, o in zip(st, other, strict=True)]
        lhs = ", ".join(st)
        return [f"{lhs} = {self.combine}({lhs}, {', '.join(other)})"]

    def finalize(self, st: list[str]) -> tuple[list[str], list[str]]:
        """(statements, result expressions) from a row state; may use K, DIV."""
        return self.fin_fn(st)


def _sum_like(elem, fin=lambda s: s) -> Reducer:  # noqa: ANN001
    return Reducer(elem_fn=lambda g: [elem(g.vals[0])], fin_fn=lambda st: ([], [fin(st[0])]))


def _extreme(is_max: bool, elem=lambda v: v) -> Reducer:  # noqa: ANN001
    return Reducer(combine="_red_max" if is_max else "_red_min", inits=[NEG_INF if is_max else POS_INF],
                   elem_fn=lambda g: [elem(g.vals[0])], fin_fn=lambda st: ([], [st[0]]))


def _arg(is_max: bool, results: tuple[str, ...]) -> Reducer:
    def fin(st: list[str]) -> tuple[list[str], list[str]]:
        by = {"value": st[0], "index": st[1]}
        return [], [by[r] for r in results]
    return Reducer(combine="_red_argmax" if is_max else "_red_argmin",
                   inits=[NEG_INF if is_max else POS_INF, "big"], index_states=(1,), results=results,
                   elem_fn=lambda g: [g.vals[0], g.kidx], fin_fn=fin)


def _norm(p: object) -> Reducer | None:
    if p in ("fro", 2, 2.0):
        return _sum_like(lambda v: f"({v}) * ({v})", lambda s: f"tl.sqrt({s})")
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return None  # 'nuc' and other matrix norms
    p = float(p)
    if p == 1.0:
        return _sum_like(lambda v: f"tl.abs({v})")
    if p == 0.0:
        return _sum_like(lambda v: f"tl.where(({v}) != 0, 1.0, 0.0)")
    if p == float("inf"):
        return _extreme(True, lambda v: f"tl.abs({v})")
    if p == float("-inf"):
        return _extreme(False, lambda v: f"tl.abs({v})")
    return _sum_like(lambda v: f"tl.exp({_f(p)} * tl.log(tl.abs({v})))",
                     lambda s: f"tl.exp(tl.log({s}) / {_f(p)})")


def lse_update(g: Gen, st: list[str], sums: list[str]) -> list[str]:
    """Online (max, sum of exp) lane update with one exp per element: exp(-|x - m|) rescales the
    sum when x is the new max and is the term otherwise; -inf adds nothing, ties add 1, NaN
    propagates through the sum. Further states accumulate `sums`."""
    m, s = st[:2]
    v = g.vals[0]
    lines = [f"lv = tl.where({g.mask}, {v}, float('-inf'))",
             f"le = tl.where(lv == {m}, 1.0, tl.exp(-tl.abs(lv - {m})))",
             "le = tl.where(lv == float('-inf'), 0.0, le)",
             f"lup = lv > {m}",
             f"{s} = tl.where(lup, {s} * le + 1.0, {s} + le)",
             f"{m} = tl.where(lup, lv, {m})"]
    return lines + [f"{t} += tl.where({g.mask}, {e}, 0.0)" for t, e in zip(st[2:], sums, strict=True)]


def _lse() -> Reducer:
    return Reducer(combine="_red_lse", inits=[NEG_INF, "0.0"], online_lse=True,
                   elem_fn=lambda g: [g.vals[0], "1.0"],
                   fin_fn=lambda st: ([], [f"_red_lse_shift({st[0]}) + tl.log({st[1]})"]))


def _var(correction: int, std: bool) -> Reducer:
    def fin(st: list[str]) -> tuple[list[str], list[str]]:
        var = f"({st[2]} / ({st[0]} - {_f(float(correction))}))"
        return [], [f"tl.sqrt({var})" if std else var]
    return Reducer(combine="_red_welford", inits=["0.0", "0.0", "0.0"], welford=True,
                   elem_fn=lambda g: ["1.0", g.vals[0], "0.0"], fin_fn=fin)


def dot_norms_reducer(fin_fn: Callable[[list[str]], tuple[list[str], list[str]]],
                      splittable: bool = True) -> Reducer:
    """x.y, |x|^2 and |y|^2 of the two tile values per row (cosine similarity, the cosine
    embedding loss), finalized by `fin_fn`."""
    return Reducer(inits=["0.0", "0.0", "0.0"], splittable=splittable,
                   elem_fn=lambda g: [f"{g.vals[0]} * {g.vals[1]}", f"{g.vals[0]} * {g.vals[0]}",
                                      f"{g.vals[1]} * {g.vals[1]}"], fin_fn=fin_fn)


def _cosine(eps: float) -> Reducer:
    def fin(st: list[str]) -> tuple[list[str], list[str]]:
        e = _f(float(eps))
        return [], [f"{st[0]} / (tl.maximum(tl.sqrt({st[1]}), {e}) * tl.maximum(tl.sqrt({st[2]}), {e}))"]
    return dot_norms_reducer(fin)


def _dims(op: Op, rank: int) -> list[int] | None:
    """The reduced dims of a reduction op, sorted and non-negative (all dims for None / ())."""
    d = op.attrs.get("dim")
    if d is None or (isinstance(d, (list, tuple)) and len(d) == 0):
        if d is not None and op.kind not in ("amax", "amin"):
            return None  # sum(x, dim=()) semantics differ across versions: leave it to PyTorch
        return list(range(rank))
    ds = list(d) if isinstance(d, (list, tuple)) else [d]
    if not all(isinstance(x, int) and -rank <= x < rank for x in ds):
        return None
    out = sorted({x % rank for x in ds})
    return out if len(out) == len(ds) else None


REDUCTION_KINDS = ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "logsumexp",
                   "var", "std", "norm")
INDEX_KINDS = ("argmax", "argmin", "max", "min")


def reduction_of(op: Op) -> tuple[Reducer, list[int]] | None:
    """The reducer and reduced dims of a reduction op, or None when we do not implement it exactly."""
    x = op.inputs[0] if op.inputs else None
    if x is None or not x.is_tensor or not x.meta.dtype.is_floating_point or x.meta.rank == 0:
        return None
    if len(op.tensor_inputs()) != 1 or op.attrs.get("out") is not None or op.attrs.get("dtype") is not None:
        return None
    rank = x.meta.rank
    dims = _dims(op, rank)
    if dims is None or not isinstance(op.attrs.get("keepdim", False), bool):
        return None
    k = op.kind
    if k in ("max", "min"):
        if op.attrs.get("dim") is None:
            return (_extreme(k == "max"), dims) if op.out.meta is not None else None
        if len(dims) != 1 or op.out.meta is not None:
            return None
        return _arg(k == "max", ("value", "index")), dims
    if k in ("argmax", "argmin"):
        if op.attrs.get("dim") is not None and len(dims) != 1:
            return None
        return _arg(k == "argmax", ("index",)), dims
    if op.out.meta is None or not op.out.meta.dtype.is_floating_point:
        return None
    if k == "sum":
        return _sum_like(lambda v: v), dims
    if k == "mean":
        return _sum_like(lambda v: v, lambda s: f"{s} / DIV"), dims
    if k == "prod":
        if not isinstance(op.attrs.get("dim"), int):
            return None  # torch.prod takes one dim (or none)
        return Reducer(combine="_red_mul", inits=["1.0"], elem_fn=lambda g: [g.vals[0]],
                       fin_fn=lambda st: ([], [st[0]])), dims
    if k in ("amax", "amin"):
        return _extreme(k == "amax"), dims
    if k == "logsumexp":
        return _lse(), dims
    if k in ("var", "std"):
        unbiased = op.attrs.get("unbiased", True)
        if not isinstance(unbiased, bool):
            return None
        return _var(1 if unbiased else 0, k == "std"), dims
    if k == "norm":
        r = _norm(op.attrs.get("p", "fro"))
        return (r, dims) if r is not None else None
    return None


def cosine_reducer(eps: float) -> Reducer:
    return _cosine(eps)


ELEMENTWISE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div")


def loss_sum_reducer(op: Op, divide: bool) -> Reducer:
    """Sum over all elements of an elementwise loss (of the two tile values), / DIV if `divide`."""
    return Reducer(elem_fn=lambda g: [TRITON[op.kind](g.vals[:2], op.attrs)],
                   fin_fn=lambda st: ([], [f"{st[0]} / DIV" if divide else st[0]]))
