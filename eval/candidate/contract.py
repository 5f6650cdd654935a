"""The output contract: what a forward returned, described as plain data, and checked exactly.

The candidate process describes its output (structure, exact type, dtype, shape, device, whether a
tensor shares memory with an input) as JSON; the judge describes the reference's output the same
way and accepts nothing but the same shape of thing: a tensor is not a 1-tuple, a list is not a
tuple, a Tensor subclass is not a tensor, and an output whose memory overlaps an input's is rejected
where the reference's does not. Tensor values never travel in a description: the candidate copies them into
output slots the judge owns (eval/candidate/wire.py), in `tensor_leaves` order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch

# Rationale: a forward's output is a handful of tensors; a deeper or wider structure is either a
# bug or an attempt to make the judge allocate without bound.
MAX_DEPTH, MAX_LEAVES = 8, 256


Span = tuple[str, int, int]
"""(device, first byte, one past the last byte) of a tensor's memory."""


def _storage_span(t: torch.Tensor) -> Span:
    s = t.untyped_storage()
    return str(t.device), s.data_ptr(), s.data_ptr() + s.nbytes()


def _span(t: torch.Tensor) -> Span:
    """The bytes `t`'s elements can touch: from its first element (storage offset included) to
    the end of its last (PyTorch strides are never negative)."""
    last = sum((n - 1) * st for n, st in zip(t.shape, t.stride(), strict=True))
    start = t.data_ptr()
    return str(t.device), start, start + (last + 1) * t.element_size()


def input_spans(inputs: list[Any]) -> list[Span]:
    """The storages of the tensors among `inputs` (the whole buffer, not only the view)."""
    return [_storage_span(x) for x in inputs
            if isinstance(x, torch.Tensor) and x.untyped_storage().nbytes()]


def aliases(t: torch.Tensor, spans: list[Span]) -> bool:
    """Whether `t`'s memory overlaps one of `spans`. By address range, not by storage object: an
    offset view (`x[1:]`, `as_strided`) shares the storage, but a new storage over an input's
    bytes (`x.untyped_storage()[16:]`, `torch.from_numpy(x.numpy()[1:])`) shares only memory."""
    if not t.numel() or type(t) is not torch.Tensor or t.layout != torch.strided:
        return False  # a subclass or another layout is rejected by its type (`mismatch`)
    dev, lo, hi = _span(t)
    return any(d == dev and s_lo < hi and lo < s_hi for d, s_lo, s_hi in spans)


def describe(obj: Any, inputs: list[Any]) -> dict[str, Any]:
    """A JSON-able description of `obj`; `inputs` are the tensors the forward was handed."""
    spans = input_spans(inputs)
    count = [0]

    def walk(o: Any, depth: int) -> dict[str, Any]:
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_LEAVES:
            return {"t": "too_big"}
        if isinstance(o, torch.Tensor):
            return {"t": "tensor", "exact": type(o) is torch.Tensor, "type": type(o).__name__,
                    "dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape),
                    "device": o.device.type, "layout": str(o.layout).removeprefix("torch."),
                    "alias": aliases(o, spans)}
        if type(o) in (tuple, list):
            return {"t": type(o).__name__, "items": [walk(x, depth + 1) for x in o]}
        if isinstance(o, tuple) and _named_tuple(o):
            # torch.max(x, dim) returns torch.return_types.max: a tuple whose exact type (and so
            # `.values` / `.indices`) is part of what the caller relies on.
            return {"t": "tuple", "named": _qualname(o), "items": [walk(x, depth + 1) for x in o]}
        if type(o) is bool or o is None:
            return {"t": "const", "v": o}
        if type(o) in (int, float):
            return {"t": type(o).__name__, "v": o if not isinstance(o, float) or math.isfinite(o)
                    else repr(o)}
        return {"t": "other", "type": type(o).__name__}

    return walk(obj, 0)


def _named_tuple(o: tuple) -> bool:
    return type(o).__module__ == "torch.return_types" or hasattr(type(o), "_fields")


def _qualname(o: Any) -> str:
    return f"{type(o).__module__}.{type(o).__qualname__}"


def tensor_leaves(obj: Any) -> list[torch.Tensor]:
    """The tensors of a nested tuple/list output, depth first (the output slots' order)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in tensor_leaves(o)]
    return []


def _kind(d: dict[str, Any]) -> str:
    if d.get("t") == "tensor":
        return "a tensor"
    if d.get("t") in ("tuple", "list"):
        return f"a {d['t']} of {len(d.get('items', []))}"
    return f"a {d.get('type') or d.get('t')}"


def mismatch(got: dict[str, Any], want: dict[str, Any], path: str = "out") -> tuple[str, str] | None:
    """(check name, one-line reason) when `got` breaks the contract `want` sets, else None."""
    if not isinstance(got, dict) or got.get("t") not in ("tensor", "tuple", "list", "const", "int",
                                                          "float", "other", "too_big"):
        return "output_structure", f"{path}: the candidate's output could not be described"
    if got["t"] == "too_big":
        return "output_structure", f"{path}: output nested deeper than {MAX_DEPTH} or wider than {MAX_LEAVES}"
    if got["t"] != want["t"] and not (got["t"] in ("int", "float") and want["t"] in ("int", "float")):
        return "output_structure", f"{path}: got {_kind(got)}, expected {_kind(want)}"
    if want["t"] in ("tuple", "list"):
        items, wanted = got.get("items") or [], want["items"]
        if got.get("named") != want.get("named"):
            return "output_structure", (f"{path}: got {got.get('named') or 'a plain tuple'}, "
                                        f"expected {want.get('named') or 'a plain tuple'}")
        if len(items) != len(wanted):
            return "output_structure", f"{path}: got {_kind(got)}, expected {_kind(want)}"
        for i, (g, w) in enumerate(zip(items, wanted, strict=True)):
            bad = mismatch(g, w, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if want["t"] != "tensor":
        return None  # numbers are compared by value (eval/judge/compare.py)
    if not got.get("exact") or got.get("layout") != "strided":
        return "output_type", (f"{path}: got a {got.get('type')} ({got.get('layout')}), expected a "
                               "plain strided torch.Tensor")
    for key in ("dtype", "shape", "device"):
        if got.get(key) != want[key]:
            return f"output_{key}", f"{path}: {key} {got.get(key)}, expected {want[key]}"
    if got.get("alias") and not want["alias"]:
        return "output_aliases_input", (f"{path}: the output's memory overlaps an input's; the "
                                        "reference returns a new tensor")
    return None


def rebuild(desc: dict[str, Any], tensors: list[torch.Tensor]) -> Any:
    """The output object a description stands for, with `tensors` (in leaf order) as its leaves."""
    return _rebuild(desc, iter(tensors))


# Module-level on purpose: a nested recursive closure refers to itself through its cell, a cycle
# that kept every rebuilt output (the judge's copy of each timed run's output) alive until a full
# gc; on an H200 a 2 GB output ran the judge out of memory after ~60 timed runs.
def _rebuild(d: dict[str, Any], it: Iterator[torch.Tensor]) -> Any:
    if d["t"] == "tensor":
        return next(it)
    if d["t"] in ("tuple", "list"):
        items = [_rebuild(x, it) for x in d["items"]]
        # A named result is rebuilt as a plain tuple: the comparison walks values, and the
        # exact type was already checked against the reference's in `mismatch`.
        return tuple(items) if d["t"] == "tuple" else items
    if d["t"] == "float":
        return float(d["v"])
    if d["t"] == "int":
        return int(d["v"])
    return d.get("v")
