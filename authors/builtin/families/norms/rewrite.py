"""Recognising hand-written norms in a captured program (the fused-layer-rms-norm rewrite hook).

Models often spell RMS norm and L2 normalization out with primitives; as separate ops they cost a
reduction kernel plus elementwise passes with intermediates. These are rewritten, op for op
equivalent, into one norm op of a kind the template emits:
- RMS:  x * rsqrt(mean(x^2, dim, keepdim=True) + eps)   or   x / sqrt(mean(x^2, ...) + eps)
        (x^2 as x.pow(2), x ** 2, x * x or torch.square(x); the rsqrt factor on either side)
- L2:   x / norm(x, p=2, dim, keepdim=True)   (no eps: a zero row gives NaN, as in PyTorch)
An RMS norm over the last dim becomes `rms_norm` (normalized_shape, eps); over another dim it is
`rms_norm` with attrs {"dim": d, "eps": eps} (our extension; `normalized_shape` None). A following
`* weight` is left to fuse as the norm's epilogue.
"""

from __future__ import annotations

from ...frontend.ir import Op, Program, Value, leaves

_Users = dict[str, list[Op]]


def _num(c: object) -> float | None:
    return float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None


def _const(v: Value) -> float | None:
    return None if v.is_tensor else _num(v.const)


def _only_use(v: Value, users: _Users, outputs: set[str]) -> bool:
    return v.name not in outputs and len(users.get(v.name, [])) == 1


def _single_dim(op: Op, rank: int) -> int | None:
    dim = op.attrs.get("dim")
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if not isinstance(dim, int) or not -rank <= dim < rank or op.attrs.get("keepdim") is not True:
        return None
    return dim % rank


def _is_square_of(op: Op | None, x: Value) -> bool:
    if op is None:
        return False
    if op.kind == "square":
        return op.inputs[0].name == x.name
    if op.kind == "pow":
        return op.inputs[0].name == x.name and len(op.inputs) > 1 and _const(op.inputs[1]) == 2.0
    if op.kind == "mul":
        return len(op.inputs) == 2 and op.inputs[0].name == op.inputs[1].name == x.name
    return False


def _match(final: Op, made: dict[str, Op], users: _Users, outputs: set[str]) -> tuple[Op, list[Op]] | None:
    """(replacement op, ops it replaces) when `final` ends a hand-written RMS / L2 norm."""
    if final.kind not in ("mul", "div") or len(final.inputs) != 2 or final.out.meta is None:
        return None
    a, b = final.inputs
    for x, f in ([(a, b), (b, a)] if final.kind == "mul" else [(a, b)]):
        if not (x.is_tensor and f.is_tensor) or x.meta.shape != final.out.meta.shape:
            continue
        if x.meta.dtype != final.out.meta.dtype or not x.meta.dtype.is_floating_point:
            continue
        fop = made.get(f.name)
        if fop is None or not _only_use(f, users, outputs):
            continue
        rank = x.meta.rank
        if final.kind == "div" and fop.kind == "norm":
            p, dim = _num(fop.attrs.get("p")), _single_dim(fop, rank)
            if fop.inputs[0].name == x.name and p == 2.0 and dim is not None and \
                    fop.attrs.get("out") is None and fop.attrs.get("dtype") is None:
                new = Op("normalize", [x], final.out, {"p": 2.0, "dim": dim, "eps": 0.0, "out": None},
                         f"({x.name} / {x.name}.norm(p=2, dim={dim}, keepdim=True))")
                return new, [fop, final]
            continue
        if (final.kind, fop.kind) not in (("mul", "rsqrt"), ("div", "sqrt")):
            continue
        add = made.get(fop.inputs[0].name)
        if add is None or add.kind != "add" or not _only_use(fop.inputs[0], users, outputs):
            continue
        if add.attrs.get("alpha", 1) != 1 or len(add.inputs) != 2:
            continue
        m_v, e_v = add.inputs if add.inputs[0].is_tensor else add.inputs[::-1]
        eps, mean = _const(e_v), made.get(m_v.name)
        if eps is None or mean is None or mean.kind != "mean" or not _only_use(m_v, users, outputs):
            continue
        dim = _single_dim(mean, rank)
        sq = made.get(mean.inputs[0].name)
        if dim is None or not _is_square_of(sq, x) or not _only_use(mean.inputs[0], users, outputs):
            continue
        if dim == rank - 1:
            attrs = {"normalized_shape": (x.meta.shape[-1],), "weight": None, "eps": eps}
        else:
            attrs = {"normalized_shape": None, "dim": dim, "weight": None, "eps": eps}
        expr = f"({x.name} * torch.rsqrt({x.name}.pow(2).mean(dim={dim}, keepdim=True) + {eps!r}))"
        return Op("rms_norm", [x], final.out, attrs, expr), [sq, mean, add, fop, final]
    return None


def rewrite_manual_norms(program: Program) -> Program | None:
    """The program with hand-written RMS / L2 norms replaced by norm ops; None if there are none."""
    outputs = {v.name for v in leaves(program.outputs)}
    changed = False
    while True:
        users = program.users()
        made = {op.out.name: op for op in program.ops}
        hit = next((m for op in program.ops if (m := _match(op, made, users, outputs)) is not None), None)
        if hit is None:
            return program if changed else None
        new, old = hit
        gone = {id(o) for o in old}
        program.ops = [new if o is old[-1] else o for o in program.ops if id(o) not in gone or o is old[-1]]
        changed = True
