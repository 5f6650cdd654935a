"""Recognising attention in a captured program (the flash-attention-tiling rewrite hook) and what
the attention template accepts.

Three spellings become one `attention` op (inputs q, k, v, then the mask and the scale where the
reference has them; attrs say how to read them):
- hand-written: matmul / bmm(q, kT), then at most one scale (`* c` or `/ c`, c a Python number)
  and at most one mask (`+ m` or `.masked_fill(b, value)`) in either order, the weights (softmax
  over the last dim, or ReLU or sigmoid elementwise: no normalisation, and a masked -inf weighs
  0 as under softmax), an optional identity (dropout with p = 0 or in eval mode), matmul / bmm
  with v; every intermediate read only by the next op.
  `masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), -inf)` is the causal mask: no mask is
  loaded and tiles above the diagonal are skipped;
- `F.scaled_dot_product_attention` without dropout (is_causal, an additive or boolean attn_mask,
  scale);
- `nn.MultiheadAttention` on one input (self-attention): the in-projection as a `linear` op (the
  GEMM family's), the attention reading its packed output through views, and the out-projection
  as a second `linear`.
Anything else (softmax over another dim, other weights, weights normalised some other way, a
tensor scale, dropout that is on) is left to the other templates, op for op.
"""

from __future__ import annotations

import math

import torch

from ...frontend.ir import Op, Program, TensorMeta, Value, leaves
from .kernel import MAX_HEAD_DIM

ADD, FILL, KEEP = 1, 2, 3
"""Mask modes (runtime/attention.py's kernel MASK): additive, filled where true, kept where true."""
WEIGHTS = ("softmax", "relu", "sigmoid")
"""What turns scores into weights (the kernel's WEIGHTS, by index). The elementwise ones are 0 at
-inf, so a causal or masked key weighs 0 and tiles above the diagonal can still be skipped."""

_Users = dict[str, list[Op]]
_GEMM = ("matmul", "bmm")


def _f32(v: Value) -> bool:
    return v.meta is not None and v.meta.dtype == torch.float32


def _num(v: Value) -> bool:
    """A Python number: a literal, or one computed from shapes at run time (`math.sqrt(d)`)."""
    if v.is_tensor:
        return False
    return v.const is None or (isinstance(v.const, (int, float)) and not isinstance(v.const, bool))


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


def _attrs(**kw: object) -> dict:
    base = {"kt": False, "packed": None, "divide": False, "mask": 0, "fill": "-inf", "mask_first": False,
            "causal": False, "bthd": False, "has_mask": False, "has_scale": False, "weights": "softmax"}
    return {**base, **kw}


def _shapes_ok(q: Value, k: Value, v: Value, kt: bool) -> bool:
    """fp32 operands of rank >= 2 whose head dims meet and fit a tile."""
    if not all(_f32(x) and x.meta.rank >= 2 for x in (q, k, v)):
        return False
    d, tk = (k.meta.shape[-2], k.meta.shape[-1]) if kt else (k.meta.shape[-1], k.meta.shape[-2])
    return (q.meta.shape[-1] == d and v.meta.shape[-2] == tk
            and 0 < d <= MAX_HEAD_DIM and 0 < v.meta.shape[-1] <= MAX_HEAD_DIM)


def _mask_ok(m: Value, scores: tuple[int, ...], dtype: torch.dtype) -> bool:
    if not m.is_tensor or m.meta.dtype != dtype:
        return False
    try:
        return torch.broadcast_shapes(m.meta.shape, scores) == torch.Size(scores)
    except RuntimeError:
        return False


def _is_causal(mask: Value, made: dict[str, Op], t: int) -> bool:
    """`mask` is torch.ones(t, t, dtype=torch.bool).triu(1): true above the diagonal."""
    tri = made.get(mask.name)
    if tri is None or tri.kind != "triu" or tri.attrs.get("diagonal") != 1:
        return False
    ones = made.get(tri.inputs[0].name)
    return (ones is not None and ones.torch_expr.startswith("torch.ones(") and ones.out.meta is not None
            and ones.out.meta.dtype == torch.bool and ones.out.meta.shape == (t, t))


class _Chain:
    """The steps between the two matmuls of a hand-written attention, read backwards from `final`."""

    def __init__(self, final: Op, made: dict[str, Op], users: _Users, outputs: set[str]):
        self.made, self.users, self.outputs = made, users, outputs
        self.final = final
        self.ops: list[Op] = [final]

    def only_use(self, v: Value) -> bool:
        return v.name not in self.outputs and len(self.users.get(v.name, [])) == 1

    def producer(self, v: Value, kinds: tuple[str, ...]) -> Op | None:
        op = self.made.get(v.name)
        return op if op is not None and op.kind in kinds and self.only_use(v) else None

    def match(self) -> Op | None:
        final = self.final
        if final.kind not in _GEMM or len(final.inputs) != 2 or not _f32(final.out):
            return None
        probs, v = final.inputs
        sm = self.producer(probs, (*WEIGHTS, "identity"))
        if sm is not None and sm.kind == "identity":
            self.ops.append(sm)
            sm = self.producer(sm.inputs[0], WEIGHTS)
        if sm is None or len(sm.inputs) != 1 or not _f32(sm.out) or not _f32(sm.inputs[0]):
            return None
        rank = sm.out.meta.rank
        dim = sm.attrs.get("dim")
        if sm.kind == "softmax" and (sm.attrs.get("dtype") is not None or not isinstance(dim, int)
                                     or dim % rank != rank - 1):
            return None
        self.ops.append(sm)
        scores = sm.out.meta.shape
        steps: list[tuple[Op, Value]] = []  # (op, its other operand), last first
        cur = sm.inputs[0]
        while True:
            op = self.producer(cur, ("mul", "div", "add", "masked_fill", *_GEMM))
            if op is None or op.kind in _GEMM or len(steps) == 2:
                break
            pair = self._step(op, scores)
            if pair is None:
                return None
            steps.append((op, pair[1]))
            self.ops.append(op)
            cur = pair[0]
        first = op if op is not None and op.kind in _GEMM else None
        if first is None or len(first.inputs) != 2 or first.out.meta.shape != scores:
            return None
        self.ops.append(first)
        q, kt = first.inputs
        if not _shapes_ok(q, kt, v, kt=True):
            return None
        return self._attention(q, kt, v, list(reversed(steps)), scores, sm.kind)

    def _step(self, op: Op, scores: tuple[int, ...]) -> tuple[Value, Value] | None:
        """(the scores operand, the other one) of a scale or mask step, or None."""
        if len(op.inputs) != 2 or op.out.meta is None or op.out.meta.shape != scores:
            return None
        a, b = op.inputs
        if op.kind in ("mul", "add"):
            if op.kind == "add" and op.attrs.get("alpha", 1) != 1:
                return None
            made_a = a.is_tensor and a.meta.shape == scores and a.name in self.made
            return (a, b) if made_a else (b, a)
        if op.kind == "div" and op.attrs.get("rounding_mode") is not None:
            return None
        return a, b

    def _attention(self, q: Value, kt: Value, v: Value, steps: list[tuple[Op, Value]],
                   scores: tuple[int, ...], weights: str) -> Op | None:
        kinds = [op.kind for op, _ in steps]
        scales = [i for i, k in enumerate(kinds) if k in ("mul", "div")]
        masks = [i for i, k in enumerate(kinds) if k in ("add", "masked_fill")]
        if len(scales) > 1 or len(masks) > 1:
            return None
        attrs = _attrs(kt=True, weights=weights)
        inputs, expr = [q, kt, v], f"torch.matmul({q.name}, {kt.name})"
        scale = Value("1.0", const=1.0)
        for op, other in steps:
            if op.kind in ("mul", "div"):
                if not _num(other):
                    return None
                scale, attrs["divide"] = other, op.kind == "div"
                expr = f"({expr} {'/' if op.kind == 'div' else '*'} {other.name})"
            elif op.kind == "add":
                if not _mask_ok(other, scores, torch.float32):
                    return None
                attrs.update(mask=ADD, has_mask=True)
                inputs.append(other)
                expr = f"({expr} + {other.name})"
            else:
                value = op.attrs.get("value")
                if not _mask_ok(other, scores, torch.bool) or isinstance(value, bool) or \
                        not isinstance(value, (int, float)):
                    return None
                fill = float(value)
                expr = f"{expr}.masked_fill({other.name}, float({str(fill)!r}))"
                square = scores[-1] == scores[-2]
                if fill == -math.inf and square and _is_causal(other, self.made, scores[-1]):
                    attrs["causal"] = True
                    continue
                attrs.update(mask=FILL, fill=str(fill), has_mask=True)
                inputs.append(other)
        attrs["mask_first"] = bool(scales and masks) and masks[0] < scales[0]
        inputs.append(scale)
        attrs["has_scale"] = True
        out = self.final.out
        weighed = f"torch.softmax({expr}, dim=-1)" if weights == "softmax" else f"torch.{weights}({expr})"
        expr = f"torch.matmul({weighed}, {v.name})"
        return Op("attention", inputs, out, attrs, expr)


def _sdpa(op: Op) -> Op | None:
    a = op.attrs
    if len(op.inputs) < 3 or a.get("dropout_p") != 0 or a.get("enable_gqa") or not _f32(op.out):
        return None
    q, k, v = op.inputs[:3]
    if not _shapes_ok(q, k, v, kt=False) or not isinstance(a.get("is_causal"), bool):
        return None
    attrs = _attrs(causal=a["is_causal"])
    inputs = [q, k, v]
    extra = {x.name: x for x in op.inputs[3:]}
    mask = a.get("attn_mask")
    if mask is not None:
        m = extra.get(mask) if isinstance(mask, str) else None
        scores = (*q.meta.shape[:-1], k.meta.shape[-2])
        if m is None or a["is_causal"] or not m.is_tensor or len(m.meta.shape) > len(scores):
            return None
        dtype = m.meta.dtype
        if dtype not in (torch.bool, torch.float32) or not _mask_ok(m, scores, dtype):
            return None
        attrs.update(mask=KEEP if dtype == torch.bool else ADD, has_mask=True)
        inputs.append(m)
    scale = a.get("scale")
    if scale is not None:
        s = extra.get(scale) if isinstance(scale, str) else Value(repr(float(scale)), const=float(scale))
        if s is None or not _num(s):
            return None
        inputs.append(s)
        attrs["has_scale"] = True
    return Op("attention", inputs, op.out, attrs, op.torch_expr)


def _mha(op: Op, users: _Users, outputs: set[str]) -> list[Op] | None:
    """nn.MultiheadAttention on one input: in-projection GEMM, packed attention, out-projection
    GEMM (whose output is the value `attn(...)[0]` was), or None."""
    x, k, v = op.inputs[:3]
    if not (x.name == k.name == v.name and _f32(x) and x.meta.rank == 3):
        return None
    w_in, b_in, w_out = op.inputs[3:6]
    b_out = op.inputs[6] if op.attrs["out_bias"] else None
    rest = op.inputs[7 if b_out is not None else 6:]
    heads, batch_first = op.attrs["num_heads"], op.attrs["batch_first"]
    e = x.meta.shape[-1]
    if e % heads or e // heads > MAX_HEAD_DIM:
        return None
    reads = users.get(op.out.name, [])
    firsts = [u for u in reads if u.kind == "getitem" and u.attrs.get("index") == 0]
    if len(firsts) != 1 or any(u not in firsts and (u.kind != "getitem" or u.out.name in outputs
                                                    or users.get(u.out.name)) for u in reads):
        return None
    mask, attrs = None, _attrs(packed=(heads, batch_first))
    (t, b) = (x.meta.shape[1], x.meta.shape[0]) if batch_first else x.meta.shape[:2]
    if rest:
        mask = rest[0]
        dtype = mask.meta.dtype if mask.is_tensor else None
        ok = dtype in (torch.bool, torch.float32) and mask.meta.shape in ((t, t), (b * heads, t, t))
        if not ok:
            return None
        attrs.update(mask=FILL if dtype == torch.bool else ADD, has_mask=True)
    qkv_shape = (*x.meta.shape[:-1], 3 * e)
    qkv = Value(f"{op.out.name}_qkv", meta=TensorMeta(qkv_shape, torch.float32, _contiguous(qkv_shape)))
    ctx = Value(f"{op.out.name}_ctx", meta=TensorMeta(x.meta.shape, torch.float32, _contiguous(x.meta.shape)))
    proj_in = Op("linear", [x, w_in, b_in], qkv, {"bias": b_in.name},
                 f"F.linear({x.name}, {w_in.name}, {b_in.name})")
    order = "2, 0, 3, 1, 4" if batch_first else "2, 1, 3, 0, 4"
    back = ".transpose(1, 2).flatten(2)" if batch_first else ".permute(2, 0, 1, 3).flatten(2)"
    m_arg = ""
    if mask is not None:
        m_view = mask.name if mask.meta.rank == 2 else f"{mask.name}.view({b}, {heads}, {t}, {t})"
        m_arg = f", attn_mask={'~' if mask.meta.dtype == torch.bool else ''}{m_view}"
    expr = (f"F.scaled_dot_product_attention(*{qkv.name}.unflatten(-1, (3, {heads}, {e // heads}))"
            f".permute({order}){m_arg}){back}")
    attn = Op("attention", [qkv] + ([mask] if mask is not None else []), ctx, attrs, expr)
    out = firsts[0].out
    proj_out = Op("linear", [ctx, w_out] + ([b_out] if b_out is not None else []), out,
                  {"bias": b_out.name if b_out is not None else None},
                  f"F.linear({ctx.name}, {w_out.name}{', ' + b_out.name if b_out is not None else ''})")
    return [proj_in, attn, proj_out]


def _bthd(op: Op, users: _Users, outputs: set[str]) -> bool:
    """The output's one reader is `.transpose(1, 2)` of a 4-D result (heads merged back): the kernel
    writes (B, T, H, dv), so the reshape after that transpose is a view, not a copy."""
    reads = users.get(op.out.name, [])
    return (op.attrs["packed"] is None and op.out.meta.rank == 4 and op.out.name not in outputs
            and len(reads) == 1 and reads[0].kind == "transpose"
            and tuple(a % 4 for a in reads[0].attrs.get("args", ())) == (1, 2))


def _drop_dead(program: Program, outputs: set[str]) -> None:
    """Remove the causal mask's ops (`ones`, `triu`) nothing reads any more."""
    while True:
        users = program.users()
        dead = [op for op in program.ops if op.kind == "triu" or op.torch_expr.startswith("torch.ones(")]
        dead = [op for op in dead if op.out.name not in outputs and not users.get(op.out.name)]
        if not dead:
            return
        gone = {id(op) for op in dead}
        program.ops = [op for op in program.ops if id(op) not in gone]


def rewrite_attention(program: Program) -> Program | None:
    """The program with its attention spelled as `attention` ops; None if it has none."""
    outputs = {v.name for v in leaves(program.outputs)}
    changed = False
    while True:
        users = program.users()
        made = {op.out.name: op for op in program.ops}
        hit: tuple[list[Op], list[Op]] | None = None
        for op in program.ops:
            if op.kind == "sdpa" and (new := _sdpa(op)) is not None:
                hit = [new], [op]
            elif op.kind == "multihead_attention" and (news := _mha(op, users, outputs)) is not None:
                hit = news, [op, *users[op.out.name]]
            elif op.kind in _GEMM:
                chain = _Chain(op, made, users, outputs)
                if (new := chain.match()) is not None:
                    hit = [new], chain.ops
            if hit is not None:
                break
        if hit is None:
            if changed:
                _drop_dead(program, outputs)
            return program if changed else None
        # In the place of the op whose value the last new op takes over: every input of the
        # replaced ops is made before it, every reader of that value after it.
        new_ops, old = hit
        gone = {id(o) for o in old}
        at = next(o for o in old if o.out.name == new_ops[-1].out.name)
        fresh = {id(n) for n in new_ops}
        program.ops = [n for o in program.ops for n in (new_ops if o is at else [o])
                       if id(n) in fresh or id(n) not in gone]
        changed = True
        users = program.users()
        for o in new_ops:
            if o.kind == "attention":
                o.attrs["bthd"] = _bthd(o, users, outputs)
