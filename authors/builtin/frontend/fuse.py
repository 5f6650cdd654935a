"""Partitioning a program into regions: pointwise chains, anchors with fused prologues and
epilogues, and PyTorch regions for everything no template claims.

Rules (each keeps the generated code equivalent to the reference, op for op):
- A pointwise chain grows while each next op is pointwise, reads a value the chain made, and
  has the chain's output shape; any other op ends it (so nothing between needs its values).
- A chain right after an anchor whose template fuses epilogues, reading only the anchor's
  output (used nowhere else) as its chain input, becomes the anchor's epilogue.
- A chain right before an anchor whose template fuses prologues, producing the anchor's main
  input and nothing used elsewhere, becomes its prologue.
- Adjacent chains left standing, of one output shape, merge into one (horizontal fusion).
"""

from __future__ import annotations

from collections.abc import Callable

from ..families.pointwise.codegen import is_pointwise
from ..templates.base import Template
from .ir import Op, Program, Region, Value, leaves

Chooser = Callable[[Region], Template | None]



def _groups(ops: list[Op]) -> list[list[Op]]:
    """Ops in order, pointwise chains grouped."""
    groups: list[list[Op]] = []
    current: list[Op] = []
    for op in ops:
        if is_pointwise(op):
            made = {o.out.name for o in current}
            joins = current and any(v.name in made for v in op.inputs) and \
                op.out.meta.shape == current[-1].out.meta.shape
            if joins:
                current.append(op)
                continue
            if current:
                groups.append(current)
            current = [op]
            continue
        if current:
            groups.append(current)
            current = []
        groups.append([op])
    if current:
        groups.append(current)
    return groups


def _scalar_op(op: Op) -> bool:
    """A Python-number computation (a shape, an entry of it, arithmetic on those): it reads no
    tensor data, so it may run anywhere after its inputs exist."""
    if op.out.meta is not None or op.outs:
        return False
    return not op.tensor_inputs() or op.kind == "getattr"


def partition(program: Program, choose: Chooser) -> list[Region]:
    """Regions in execution order; `choose` picks a template for a region (or None).

    Scalar ops (`_scalar_op`) are left out of the grouping, so `d = x.shape[-1]` between a GEMM
    and `y / math.sqrt(d)` does not keep the division out of the GEMM's epilogue, and are placed
    back right after the region that makes their last input. Where that region is also one that
    reads them (a shape of a value made inside the same fused chain), they group as before."""
    users = program.users()
    outputs = {v.name for v in leaves(program.outputs)}
    skip: set[int] = {id(op) for op in program.ops if _scalar_op(op)}
    while True:
        regions, late = _partition(program, choose, skip, users, outputs)
        if not late:
            return regions
        skip -= late


def _partition(program: Program, choose: Chooser, skip: set[int], users: dict[str, list[Op]],
               outputs: set[str]) -> tuple[list[Region], set[int]]:
    """Regions with the ops in `skip` placed after their producers; also the skipped ops that
    could not be placed (a reader in their producer's region)."""
    ops = [op for op in program.ops if id(op) not in skip]
    regions = _regions(ops, choose, users, outputs)
    where = {v.name: i for i, r in enumerate(regions) for op in r.all_ops() for v in (op.out, *op.outs)}
    after: dict[int, list[Op]] = {}
    late: set[int] = set()
    for op in program.ops:
        if id(op) not in skip:
            continue
        pos = max((where[v.name] for v in op.inputs if v.name in where), default=-1)
        after.setdefault(pos, []).append(op)
        where[op.out.name] = pos
    for op in program.ops:
        if id(op) in skip and any(id(u) not in skip and where[u.out.name] <= where[op.out.name]
                                  for u in users.get(op.out.name, [])):
            late.add(id(op))
    if late:
        return regions, late
    placed: list[Region] = []
    for i in range(-1, len(regions)):
        if i >= 0:
            placed.append(regions[i])
        for op in after.get(i, []):
            r = Region(kind=op.kind, ops=[], anchor=op)
            r.outputs = _region_outputs(r, users, outputs)
            placed.append(r)
    return placed, late


def _regions(ops: list[Op], choose: Chooser, users: dict[str, list[Op]], outputs: set[str]) -> list[Region]:

    def escapes(names: set[str], inside: set[str]) -> bool:
        return any(name in outputs or any(id(u) not in inside for u in users.get(name, []))
                   for name in names)

    regions: list[Region] = []
    for group in _groups(ops):
        first = group[0]
        if is_pointwise(first):
            region = Region(kind="pointwise", ops=group)
            prev = regions[-1] if regions else None
            if prev is not None and _try_epilogue(prev, region, users, outputs, choose):
                continue
            regions.append(region)
            continue
        region = Region(kind=first.kind, ops=[], anchor=first)
        tpl = choose(region)
        prev = regions[-1] if regions else None
        if tpl is not None and tpl.supports_prologue and prev is not None and prev.kind == "pointwise" \
                and prev.ops[-1].out.name == first.inputs[0].name:
            made = {o.out.name for o in prev.ops}
            inside = {id(o) for o in prev.ops} | {id(first)}
            if not escapes(made, inside) and prev.ops[-1].out.meta.shape == first.inputs[0].meta.shape:
                trial = Region(kind=first.kind, ops=[], anchor=first, prologue=prev.ops)
                if choose(trial) is tpl:
                    regions[-1] = trial
                    continue
        regions.append(region)
    regions = _merge_siblings(regions, choose)
    for r in regions:
        r.outputs = _region_outputs(r, users, outputs)
        tpl = choose(r)
        r.template = tpl.id if tpl is not None else None
    return regions


def _merge_siblings(regions: list[Region], choose: Chooser) -> list[Region]:
    """Adjacent pointwise chains of one shape become one kernel (horizontal fusion): the later
    chain's inputs exist before it starts, so running it after the earlier one in the same
    kernel computes the same values, with one launch instead of two and no bytes added. The gates
    of an unrolled recurrent step (sigmoid(f) * c, sigmoid(i) * tanh(g), ...) are such siblings.
    Chains already taken as an anchor's prologue or epilogue are not regions here."""
    merged: list[Region] = []
    for r in regions:
        prev = merged[-1] if merged else None
        if prev is not None and prev.kind == r.kind == "pointwise" \
                and prev.ops[-1].out.meta.shape == r.ops[-1].out.meta.shape:
            trial = Region(kind="pointwise", ops=prev.ops + r.ops)
            tpl = choose(trial)
            if tpl is not None and tpl is choose(prev) and tpl is choose(r):
                merged[-1] = trial
                continue
        merged.append(r)
    return merged


def _try_epilogue(prev: Region, chain: Region, users: dict[str, list[Op]], outputs: set[str],
                  choose: Chooser) -> bool:
    anchor = prev.anchor
    if anchor is None or prev.epilogue or anchor.out.meta is None:
        return False
    tpl = choose(prev)
    if tpl is None or not tpl.supports_epilogue:
        return False
    a = anchor.out.name
    if a in outputs or len(users.get(a, [])) != 1 or users[a][0] is not chain.ops[0]:
        return False
    if chain.ops[-1].out.meta.shape != anchor.out.meta.shape:
        return False
    inside = {id(o) for o in chain.ops}
    made = {o.out.name for o in chain.ops[:-1]}
    if any(n in outputs or any(id(u) not in inside for u in users.get(n, [])) for n in made):
        return False  # an intermediate of the chain is needed elsewhere
    trial = Region(kind=prev.kind, ops=[], anchor=anchor, prologue=prev.prologue, epilogue=chain.ops)
    if choose(trial) is not tpl:
        return False
    prev.epilogue = chain.ops
    return True


def _region_outputs(r: Region, users: dict[str, list[Op]], outputs: set[str]) -> list[Value]:
    inside = {id(o) for o in r.all_ops()}
    result = []
    for op in r.all_ops():
        for v in [op.out, *op.outs]:
            if v.name in outputs or any(id(u) not in inside for u in users.get(v.name, [])):
                result.append(v)
    return result
