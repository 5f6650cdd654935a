"""Losses as reductions: elementwise losses summed to a scalar, cross entropy (class-index or
probability targets, label smoothing, ignore_index), cosine similarity and the cosine embedding
loss per row.

Each builds a RedSpec for families/reductions/codegen, so losses get the same layouts (row / column
tiles, any class dim position, strided or broadcast operands), prologue / epilogue fusion and
deterministic grid-wide reductions as the plain reductions.
"""

from __future__ import annotations

import torch

from ...frontend.ir import Region
from ..pointwise.codegen import _f
from .codegen import RedSpec, point_values
from .reducers import (
    ELEMENTWISE_LOSSES,
    Reducer,
    cosine_reducer,
    dot_norms_reducer,
    loss_sum_reducer,
)


def _lse_sum_lanes(st: list[str], out: list[str], a: int) -> list[str]:
    m, s = st[:2]
    lines = [f"{out[0]} = tl.max({m}, axis={a})",
             f"lsh = tl.expand_dims(_red_lse_shift({out[0]}), {a})",
             f"{out[1]} = tl.sum({s} * tl.exp({m} - lsh), axis={a})"]
    return lines + [f"{o} = tl.sum({x}, axis={a})" for o, x in zip(out[2:], st[2:], strict=True)]


def _lse_minus(st: list[str], v: str, total: str | None = None) -> str:
    """logsumexp - v (or total * logsumexp - v) as log(s) + (shift - v), PyTorch's order: (shift +
    log(s)) - v rounds to the shift's ulp first, which on a confident row (a loss near 3e-4 from
    logits near 7) is an error 15x PyTorch's own. Exact shift - v for a one-hot target."""
    shift = f"_red_lse_shift({st[0]})"
    if total is None:
        return f"(tl.log({st[1]}) + ({shift} - {v}))"
    return f"(tl.log({st[1]}) * {total} + ({shift} * {total} - {v}))"


def _floats(*vs) -> bool:  # noqa: ANN002
    return all(v.is_tensor and v.meta.dtype.is_floating_point for v in vs)


def _no_reduction_args(op_attrs: dict) -> bool:
    return all(op_attrs.get(k) is None for k in ("size_average", "reduce", "weight"))


def _bshape(region: Region) -> tuple[int, ...]:
    a = region.anchor
    return tuple(torch.broadcast_shapes(*(v.meta.shape for v in a.inputs[:2])))


# ---- elementwise losses reduced to a scalar ---------------------------------------------------
def elementwise_loss_ok(region: Region) -> bool:
    a = region.anchor
    if a.kind not in ELEMENTWISE_LOSSES or len(a.inputs) < 2 or not _no_reduction_args(a.attrs):
        return False
    x, y = a.inputs[:2]
    if not _floats(x, y):
        return False
    red = a.attrs.get("reduction")
    if red == "batchmean":
        return a.kind == "kl_div" and x.meta.rank >= 1 and x.meta.shape == y.meta.shape
    if a.kind == "huber_loss" and not float(a.attrs.get("delta", 1.0)) > 0:
        return False
    if a.kind == "smooth_l1_loss" and float(a.attrs.get("beta", 1.0)) < 0:
        return False
    return red in ("mean", "sum") and len(_bshape(region)) >= 1


def elementwise_loss_spec(region: Region, operands: list) -> RedSpec:
    a = region.anchor
    red = a.attrs["reduction"]
    return RedSpec(operands=operands, dims=list(range(len(_bshape(region)))), keepdim=False,
                   reducer=loss_sum_reducer(a, red != "sum"), vals=[a.inputs[0].name, a.inputs[1].name],
                   prologue=list(region.prologue), epilogue=list(region.epilogue), anchor_out=a.out,
                   out_dtypes=[str(a.out.meta.dtype)], div=0 if red == "batchmean" else None)


# ---- cross entropy -----------------------------------------------------------------------------
def cross_entropy_ok(region: Region) -> bool:
    a = region.anchor
    if a.kind != "cross_entropy" or len(a.inputs) != 2 or not _no_reduction_args(a.attrs):
        return False
    x, t = a.inputs
    if not (x.is_tensor and t.is_tensor and x.meta.dtype.is_floating_point) or x.meta.rank == 0:
        return False
    if a.attrs.get("reduction") not in ("none", "mean", "sum"):
        return False
    ls = a.attrs.get("label_smoothing", 0.0)
    if not isinstance(ls, (int, float)) or not 0.0 <= float(ls) <= 1.0:
        return False
    if t.meta.dtype.is_floating_point:
        return t.meta.shape == x.meta.shape
    if t.meta.dtype not in (torch.int64, torch.int32) or not isinstance(a.attrs.get("ignore_index"), int):
        return False
    cdim = 1 if x.meta.rank >= 2 else 0
    return t.meta.shape == x.meta.shape[:cdim] + x.meta.shape[cdim + 1:]


def cross_entropy_spec(region: Region, operands: list) -> RedSpec:
    a = region.anchor
    x, t = a.inputs
    cdim = 1 if x.meta.rank >= 2 else 0
    eps = float(a.attrs.get("label_smoothing", 0.0))
    red = a.attrs["reduction"]
    tj = next(j for j, v in enumerate(operands) if v.name == t.name)
    common = dict(operands=operands, dims=[cdim], keepdim=False, vals=[x.name],
                  prologue=list(region.prologue), epilogue=list(region.epilogue), anchor_out=a.out,
                  out_dtypes=[str(a.out.meta.dtype)], scalar=None if red == "none" else red)
    if t.meta.dtype.is_floating_point:
        # -sum_c t'_c log_softmax(x)_c = lse * sum(t') - sum(t' x), t' = t (1 - eps) + eps / C.
        def elems_p(g) -> list[str]:  # noqa: ANN001
            tp = f"({g.vals[1]} * {_f(1.0 - eps)} + {_f(eps)} / K)" if eps else g.vals[1]
            return [g.vals[0], "1.0", tp, f"{tp} * {g.vals[0]}"]
        red_p = Reducer(combine="_red_lse_add2", inits=["float('-inf')", "0.0", "0.0", "0.0"],
                        splittable=False, elem_fn=elems_p, lanes_fn=_lse_sum_lanes, online_lse=True,
                        fin_fn=lambda st: ([], [_lse_minus(st, st[3], st[2])]))
        return RedSpec(reducer=red_p, **{**common, "vals": [x.name, t.name]})
    ignore = int(a.attrs.get("ignore_index", -100))
    inits = ["float('-inf')", "0.0"] + (["0.0"] if eps else [])

    def elems(g) -> list[str]:  # noqa: ANN001
        return [g.vals[0], "1.0"] + ([g.vals[0]] if eps else [])

    def fin(st: list[str]) -> tuple[list[str], list[str]]:
        if not eps:
            return [], [f"tl.where(valid, {_lse_minus(st, 'xt')}, 0.0)"]
        loss = f"({_f(1.0 - eps)} * {_lse_minus(st, 'xt')} + {_f(eps)} * {_lse_minus(st, f'{st[2]} / K')})"
        return [], [f"tl.where(valid, {loss}, 0.0)"]
    gspec = RedSpec(operands=operands, dims=[cdim], keepdim=False, reducer=None, vals=[x.name],
                    prologue=list(region.prologue), row_ops=(tj,))
    gather, gv = point_values(gspec, "tcl", "valid")
    extra = [f"tgt = tl.load(x{tj} + b{tj}, mask=rmask, other=0)",
             f"valid = rmask & (tgt != {ignore})",
             # Out-of-range targets are the reference's error; clamping keeps the gather in bounds.
             "tcl = tl.minimum(tl.maximum(tgt, 0), K - 1)"] + gather + [f"xt = {gv[0]}"]
    red_i = Reducer(combine="_red_lse_add" if eps else "_red_lse", inits=inits, splittable=False,
                    elem_fn=elems, lanes_fn=_lse_sum_lanes, fin_fn=fin, online_lse=True)
    return RedSpec(reducer=red_i, unsqueeze=(tj, cdim), row_ops=(tj,), extra_fin=extra,
                   count="tl.where(valid, 1.0, 0.0)", **common)


# ---- cosine similarity -------------------------------------------------------------------------
def cosine_ok(region: Region) -> bool:
    a = region.anchor
    if a.kind != "cosine_similarity" or len(a.inputs) != 2 or a.out.meta is None:
        return False
    x, y = a.inputs
    if not _floats(x, y):
        return False
    rank = len(_bshape(region))
    d = a.attrs.get("dim", 1)
    eps_ok = isinstance(a.attrs.get("eps"), (int, float))
    return isinstance(d, int) and rank >= 1 and -rank <= d < rank and eps_ok


def cosine_spec(region: Region, operands: list) -> RedSpec:
    a = region.anchor
    rank = len(_bshape(region))
    return RedSpec(operands=operands, dims=[a.attrs.get("dim", 1) % rank], keepdim=False,
                   reducer=cosine_reducer(float(a.attrs["eps"])), vals=[a.inputs[0].name, a.inputs[1].name],
                   prologue=list(region.prologue), epilogue=list(region.epilogue), anchor_out=a.out,
                   out_dtypes=[str(a.out.meta.dtype)])


# ---- cosine embedding loss ---------------------------------------------------------------------
# ATen's formula (Loss.cpp): cos = x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)); the loss is
# 1 - cos where y == 1, max(0, cos - margin) where y == -1 and 0 for any other label.
_CEL_EPS = 1e-12


def cosine_embedding_ok(region: Region) -> bool:
    a = region.anchor
    if a.kind != "cosine_embedding_loss" or len(a.inputs) != 3 or not _no_reduction_args(a.attrs):
        return False
    x1, x2, y = a.inputs
    if not (_floats(x1, x2) and y.is_tensor) or y.meta.dtype == torch.bool:
        return False
    if a.attrs.get("reduction") not in ("none", "mean", "sum") or not isinstance(a.attrs.get("margin"),
                                                                                 (int, float)):
        return False
    rank = x1.meta.rank
    # The reduced dim is the last one of 1-D / 2-D inputs; the labels index the rows.
    return rank in (1, 2) and x1.meta.shape == x2.meta.shape and y.meta.shape == x1.meta.shape[:-1]


def cosine_embedding_spec(region: Region, operands: list) -> RedSpec:
    a = region.anchor
    x1, x2, y = a.inputs
    rank = x1.meta.rank
    red = a.attrs["reduction"]
    yj = next(j for j, v in enumerate(operands) if v.name == y.name)
    e, margin = _f(_CEL_EPS), _f(float(a.attrs["margin"]))

    def fin(st: list[str]) -> tuple[list[str], list[str]]:
        cos = f"{st[0]} / tl.sqrt(({st[1]} + {e}) * ({st[2]} + {e}))"
        loss = f"tl.where(lab == 1, 1.0 - cos, tl.where(lab == -1, tl.maximum(cos - {margin}, 0.0), 0.0))"
        return [f"cos = {cos}"], [loss]
    # Not splittable: the labels are loaded next to the row's operands, which a combine kernel lacks.
    reducer = dot_norms_reducer(fin, splittable=False)
    return RedSpec(operands=operands, dims=[rank - 1], keepdim=False, reducer=reducer,
                   vals=[x1.name, x2.name], prologue=list(region.prologue), epilogue=list(region.epilogue),
                   anchor_out=a.out, out_dtypes=[str(a.out.meta.dtype)], unsqueeze=(yj, rank - 1),
                   row_ops=(yj,),
                   extra_fin=[f"lab = tl.load(x{yj} + b{yj}, mask=rmask, other=0)"],
                   scalar=None if red == "none" else red)


__all__ = ["cosine_embedding_ok", "cosine_embedding_spec", "cosine_ok", "cosine_spec",
           "cross_entropy_ok", "cross_entropy_spec", "elementwise_loss_ok", "elementwise_loss_spec"]
