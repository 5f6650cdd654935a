"""Reverse scans by index math: flip -> scan -> flip (and a single flip on either side) as one pass.

`x.flip(d).cumsum(d).flip(d)` costs three kernels that each read and write the tensor. The
rewrite replaces the chain with one `flip_scan` op: a flip of the input turns the scan into a
reverse scan (`tl.cumsum(..., reverse=True)` over blocks visited from the end of the line, the
loads staying ascending and coalesced), and a flip of the output only mirrors the store index.
One read and one write, like a forward scan; prologues and epilogues fuse as for any scan.
"""

from __future__ import annotations

import ast

from kernelskill.authors.builtin.templates.api import (
    COMBINES,
    EmitContext,
    Emitted,
    Op,
    Program,
    Region,
    Template,
    Value,
    emit_scan,
    scan_dim,
    scan_region_ok,
)


def flip_dims(op: Op) -> tuple[int, ...] | None:
    """The dims of a flip op, normalised, read from its PyTorch expression (`torch.flip(x, dims)`,
    `x.flip(d0, d1)`, `x.flip(dims)`); None when they are not literal ints."""
    if op.kind != "flip" or not op.inputs or op.inputs[0].meta is None:
        return None
    try:
        call = ast.parse(op.torch_expr, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    method = not (isinstance(call.func.value, ast.Name) and call.func.value.id == "torch")
    args = list(call.args if method else call.args[1:]) + [k.value for k in call.keywords if k.arg == "dims"]
    try:
        vals = [ast.literal_eval(a) for a in args]
    except ValueError:
        return None
    if len(vals) == 1 and isinstance(vals[0], (list, tuple)):
        vals = list(vals[0])
    rank = op.inputs[0].meta.rank
    dims = []
    for d in vals:
        if not isinstance(d, int) or isinstance(d, bool) or not -rank <= d < rank:
            return None
        dims.append(d % rank)
    return tuple(dims)


def _leaves(out: object) -> set[str]:
    if isinstance(out, Value):
        return {out.name}
    if isinstance(out, (list, tuple)):
        return {n for o in out for n in _leaves(o)}
    return set()


class ReverseScan(Template):
    kinds = ("rewrite", "flip_scan")
    supports_prologue = True
    supports_epilogue = True
    params = {"split": ["auto", "always", "never"]}

    # ---- rewrite: flip? -> scan -> flip? into one flip_scan op --------------------------------
    def rewrite(self, program: Program, ctx: EmitContext) -> Program | None:
        users = program.users()
        outputs = _leaves(program.outputs)

        def sole_user(v: Value) -> Op | None:
            us = users.get(v.name, [])
            return us[0] if len(us) == 1 and v.name not in outputs else None

        producer = {op.out.name: op for op in program.ops}
        removed: set[int] = set()
        replace: dict[int, Op] = {}
        for scan in program.ops:
            if scan.kind not in COMBINES or id(scan) in removed or not scan.inputs:
                continue
            dim = scan_dim(scan.inputs[0], scan.attrs.get("dim"))
            if dim is None:
                continue
            pre = producer.get(scan.inputs[0].name)
            pre = pre if pre is not None and id(pre) not in removed and flip_dims(pre) == (dim,) \
                and sole_user(pre.out) is scan else None
            post = sole_user(scan.out)
            post = post if post is not None and flip_dims(post) == (dim,) else None
            if pre is None and post is None:
                continue
            src = pre.inputs[0] if pre else scan.inputs[0]
            last = post or scan
            arg = f"torch.flip({src.name}, dims=[{dim}])" if pre else src.name
            expr = f"torch.{scan.kind}({arg}, dim={dim})"
            if post:
                expr = f"torch.flip({expr}, dims=[{dim}])"
            fused = Op("flip_scan", [src], last.out, {"dim": dim, "op": scan.kind, "in_rev": pre is not None,
                                                       "out_rev": post is not None}, expr)
            removed |= {id(o) for o in (pre, scan, post) if o is not None}
            replace[id(last)] = fused
        if not replace:
            return None
        program.ops = [replace.get(id(o), o) for o in program.ops if id(o) not in removed or id(o) in replace]
        return program

    # ---- the fused op --------------------------------------------------------------------------
    def match(self, region: Region) -> bool:
        a = region.anchor
        return a is not None and a.kind == "flip_scan" and a.attrs.get("op") in COMBINES and scan_region_ok(
            region, scan_dim(a.inputs[0], a.attrs.get("dim")))

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        a = region.anchor
        return emit_scan(region, ctx, a.attrs["op"], scan_dim(a.inputs[0], a.attrs["dim"]),
                         in_rev=a.attrs["in_rev"], out_rev=a.attrs["out_rev"])


TEMPLATE = ReverseScan()
