"""Building normalization regions into kernels and launchers (shared by the fused-layer-rms-norm
and two-level-norm-statistics templates).

`parse_norm` reads an op's operands and attributes into a `NormSpec` (None when the op is a
variant we do not generate); `emit_norm` writes the region's launcher and, when fused chains make
them region-specific, its kernels (otherwise the kernels are shared by every norm of the file).
Which kernel runs (rows in registers, strided columns, two-level statistics) is decided at run
time from the actual sizes and strides, so one candidate serves small and full sizes; the decision
and the rest of the launch geometry are planned once per operand signature (`_Launcher`).
"""

from __future__ import annotations

import torch

from ...frontend.ir import Region, Value
from ...runtime import COLLAPSE, NORMS_RUNTIME
from ...templates.base import EmitContext, Emitted
from ...templates.launch import plan_lookup
from ..pointwise.codegen import ChainCode
from . import kernels as S
from .match import NormSpec

ROW_MAX = 16384
"""Longest row held in registers (16 warps x 32 fp32 per thread); longer rows go two-level, which
also spreads the statistics of a few long rows over every SM. Rationale: below that, even a few
rows (<= 132 x 64 KB) take ~1 us in one pass, less than the two extra launches of two-level."""


class Chains:
    """The region's fused prologue (computes x) and epilogue (applied to the normalized value)
    as ChainCode, spliced into the kernels (kernels.render) and launchers."""

    def __init__(self, region: Region):
        self.pro = ChainCode(region.prologue, Value("__nrm_no_anchor__"), "p") if region.prologue else None
        self.epi = ChainCode(region.epilogue, region.anchor.out, "e") if region.epilogue else None

    @property
    def empty(self) -> bool:
        return self.pro is None and self.epi is None

    def _codes(self, with_epi: bool) -> list[ChainCode]:
        return [c for c in (self.pro, self.epi if with_epi else None) if c is not None]

    def render(self, kernel: S.NormKernel, name: str, with_epi: bool = True) -> str:
        """`kernel` with the region's chains spliced in (kernels.render)."""
        plain, const = [], []
        for c in self._codes(with_epi):
            params = c.kernel_params()
            plain += [p for p in params if "constexpr" not in p]
            const += [p for p in params if "constexpr" in p]
        return S.render(kernel, name, self._load(), self._epilogue() if with_epi else None,
                        tuple(plain), tuple(const))

    def _load(self) -> list[str] | None:
        if self.pro is None:
            return None
        body, var = self.pro.kernel_body("0.0", "lin", "mask")
        return [*body, f"v = {var}"]

    def _epilogue(self) -> list[str] | None:
        if self.epi is None:
            return None
        body, var = self.epi.kernel_body("out", "lin", "mask")
        return [*body, f"res = {var}"]

    # ---- launcher side ---------------------------------------------------------------------
    def params(self) -> tuple[list[str], list[str]]:
        """(prologue operand parameters, epilogue operand parameters) of the launcher."""
        pro = [f"pa{i}" for i in range(len(self.pro.ext))] if self.pro else []
        epi = [f"ea{i}" for i in range(len(self.epi.ext))] if self.epi else []
        return pro, epi

    def forward_args(self) -> tuple[list[str], list[str]]:
        return ([v.name for v in self.pro.ext] if self.pro else [],
                [v.name for v in self.epi.ext] if self.epi else [])

    def prelude(self, shape_expr: str) -> list[str]:
        pro, epi = self.params()
        lines = self.pro.launch_prelude(shape_expr, pro) if self.pro else ["p_args, p_kw = [], {}"]
        lines += self.epi.launch_prelude(shape_expr, epi) if self.epi else ["e_args, e_kw = [], {}"]
        return lines


def _kernels(ctx: EmitContext, ch: Chains, which: list[str], em: Emitted) -> dict[str, str]:
    """Kernel names; chain-free kernels are shared by all norms of the file (compiled once)."""
    names = {}
    for k in which:
        kernel = S.KERNELS[k]
        if ch.pro is None and (ch.epi is None or not kernel.epilogue):
            names[k] = f"_nrm_{k}_kernel"
            ctx.share(names[k], ch.render(kernel, names[k], kernel.epilogue))
        else:
            names[k] = ctx.name(f"nrm_{k}_kernel")
            em.kernels.append(ch.render(kernel, names[k], kernel.epilogue))
    return names


def _ind(lines: list[str]) -> list[str]:
    return ["    " + ln for ln in lines]


class _Launcher:
    """The launcher of one norm region and its plan function.

    Everything that depends only on the operands' metadata (output shape, the layout of x, the
    fused chains' collapsed geometry, int64 offsets, the kernel path, block sizes, grids,
    constexprs) is planned once per operand signature on meta tensors by `{name}_plan` and cached
    (runtime _new_plan); a call costs a dict lookup, the output and workspace allocations and the
    launches (via _launch). A layout that copies operands (a strided x that must be made
    contiguous, chain operands the collapse cannot express) is planned per call on the real ones.
    Running statistics are data: they are updated by kernels on every call, never planned."""

    def __init__(self, spec: NormSpec, ch: Chains, lname: str, plans: str,
                 extra: dict[str, Value | str | None]):
        self.spec, self.ch, self.name, self.plans = spec, ch, lname, plans
        self.pro, self.epi = ch.params()
        first = self.pro if ch.pro else ["x"]
        present = [p for p, v in extra.items() if v is not None]
        self.params = [*first, *extra, *self.epi]
        # The plan key's operands, in order: absent weights / statistics are None in every call
        # (the forward passes a literal None).
        self.ops = [*first, *present, *self.epi]
        laid_first = (["*p_ops"] if self.pro else []) if ch.pro else ["x"]
        self.laid = [*laid_first, *present, *(["*e_ops"] if self.epi else [])]
        self.affine = [p for p in ("w", "b") if p in present]
        # Kernel arguments of the call: x (y stands in for its pointer when a prologue computes
        # it), weight and bias (y when absent), and the chains' operands with their planned sizes
        # and strides.
        self.x = "y" if ch.pro else "x"
        self.w, self.b = ("w" if "w" in present else "y"), ("b" if "b" in present else "y")
        self.pro_args = [*self.pro, "*pt"] if ch.pro else []
        self.tail = [*self.pro_args, *([*self.epi, "*et"] if ch.epi else [])]

    def kw(self, consts: str) -> str:
        """The kernel's constexprs: `consts`, the affine flags, int64 offsets, the chains'."""
        s = self.spec
        return (f"dict({consts}, HAS_W={s.weight is not None}, HAS_B={s.bias is not None}, I64=i64, "
                "**p_kw, **e_kw)")

    def call(self, kern: str, head: list[str]) -> str:
        """_launch of `kern` with tensor arguments `head`, the plan's `args` and the chains'."""
        return f"_launch({kern}, grid, pick, ({', '.join([*head, '*args', *self.tail])}), kw)"

    def stats(self, kern: str, extra: str = "") -> str:
        """The two-level statistics of the plan's `sp` (`extra`: running-statistics arguments)."""
        pro = f"({', '.join(self.pro_args)})" if self.pro_args else "()"
        return f"stats = _nrm_group_stats({kern}, sp, {self.x}, {pro}{extra})"

    def plan_fn(self, body: list[str], dt: torch.dtype) -> list[str]:
        """`{name}_plan(ops, dev) -> (plan, laid-out ops)`: the head shared by every norm (shape,
        chains, int64 offsets, weight layout), `body` (sets path, args, kw, grid, sp), the plan."""
        ch = self.ch
        shape = f"_bshape({', '.join(p + '.shape' for p in self.pro)})" if ch.pro else "x.shape"
        head = [f"[{', '.join(self.ops)}] = ops",
                f"shape = {shape}",
                f'y = torch.empty(shape, device="meta", dtype={dt})',
                "if y.numel() == 0:",
                "    return _nrm_plan(shape), ops",
                *ch.prelude("shape")]
        if ch.pro:
            # x is never loaded (the prologue's operands are): y stands in for its pointer, and
            # the layout is the logical one.
            head.append("x = y")
        head.append(f"i64 = _i64(x, y, *p_args[:{len(self.pro)}], *e_args[:{len(self.epi)}])")
        # The kernels read weight and bias as flat arrays.
        head += [f"{p} = {p} if {p}.is_contiguous() else {p}.reshape(-1)" for p in self.affine]
        pt = f"tuple(p_args[{len(self.pro)}:])" if ch.pro else "()"
        et = f"tuple(e_args[{len(self.epi)}:])" if ch.epi else "()"
        tail = [f"return _nrm_plan(shape, path, args, kw, grid, {pt}, {et}, sp), [{', '.join(self.laid)}]"]
        # The docstring names no launcher, so identical regions' plans stay identical (emit.dedupe).
        doc = ['"""(plan, laid-out ops) of the launcher this is named after (see _nrm_plan) for `ops`:',
               'meta tensors, or the real operands where the layout copies them."""']
        return [f"def {self.name}_plan(ops, dev):", *_ind([*doc, *head, "sp = None", *body, *tail])]

    def launcher(self, launches: list[str], dt: torch.dtype) -> list[str]:
        ops = ", ".join(self.ops)
        lookup = [f"    ops = [{ops}]",
                  *plan_lookup(self.plans, self.name, len(self.ops)),
                  f"    [{ops}] = ops  # the laid-out operands where the layout copies them"]
        body = ["shape, path, args, kw, grid, pick, pt, et, sp = plan",
                f"y = torch.empty(shape, device=key[3], dtype={dt})",
                "if path < 0:",
                "    return y",
                *launches,
                "return y"]
        return [f"{self.plans} = {{}}", "", "", f"def {self.name}({', '.join(self.params)}):", *lookup,
                *_ind(body)]


def emit_norm(region: Region, ctx: EmitContext, spec: NormSpec) -> Emitted:
    ctx.share("collapse", COLLAPSE)
    ctx.share("norms_runtime", NORMS_RUNTIME)
    ch = Chains(region)
    em = Emitted()
    out = region.output()
    extra_outs = [v for v in region.outputs if v.name != out.name]
    if extra_outs:
        raise ValueError(f"norm region would have to produce {extra_outs[0].name} too")
    lname = ctx.name(f"{spec.kind}")
    if spec.kind in ("layer_norm", "rms_norm", "normalize"):
        k = _kernels(ctx, ch, ["row", "col", "stats", "apply"], em)
        extra = {"w": spec.weight, "b": spec.bias}
        gen = _Launcher(spec, ch, lname, ctx.name("plans"), extra)
        plan, launches = _rows_launcher(gen, k)
    else:
        which = ["row", "stats", "apply"] if spec.kind != "batch_norm" else ["stats", "apply"]
        k = _kernels(ctx, ch, which, em)
        extra = {"w": spec.weight, "b": spec.bias, "rm": spec.running_mean, "rv": spec.running_var,
                 "nbt": spec.nbt}
        gen = _Launcher(spec, ch, lname, ctx.name("plans"), extra)
        plan, launches = _grouped_launcher(gen, k)
    dt = out.meta.dtype
    em.helpers += ["\n".join(gen.plan_fn(plan, dt)), "\n".join(gen.launcher(launches, dt))]
    pro, epi = ch.forward_args()
    first = pro if ch.pro else [spec.x.name]
    args = [_arg(v) for v in extra.values()]
    em.lines.append(f"{out.name} = {lname}({', '.join([*first, *args, *epi])})")
    return em


def _arg(v: Value | str | None) -> str:
    """The forward's expression of a launcher argument (a value, or a buffer's expression)."""
    return "None" if v is None else v if isinstance(v, str) else v.name


def _rows_launcher(g: _Launcher, k: dict[str, str]) -> tuple[list[str], list[str]]:
    """layer_norm / rms_norm / normalize: rows in registers, strided columns, or two-level.
    Returns (plan body, launcher launches)."""
    spec = g.spec
    red = (f"len(shape) - {spec.reduce_last}, len(shape)" if spec.dim is None
           else f"{spec.dim}, {spec.dim + 1}")
    m, eps = spec.mode, repr(spec.eps)
    plan = [f"d0, d1 = {red}"]
    if g.ch.pro:
        plan += ["lay = _nrm_layout(shape, _nrm_cstrides(shape), d0, d1)"]
    else:
        plan += ["lay = _nrm_layout(shape, x.stride(), d0, d1)",
                 "if lay is None:",
                 "    x = x.contiguous()",
                 "    lay = _nrm_layout(shape, x.stride(), d0, d1)"]
    plan += [
        "O, R, I, (so, sr, si), (yo, yr, yi) = lay",
        "if I == 1 and (sr == 1 or R == 1):",
        f"    if R <= {ROW_MAX}:",
        "        path, grid = 0, lambda meta: (_cdiv(O, meta['ROWS']),)",
        f"        args = (O, R, so, {eps}, 1, 1, 1)",
        "        kw = " + g.kw(f"MODE={m}, AFF=2, BLOCK=_npow2(R)"),
        "    else:",
        f"        sp = _nrm_stats_prep(1, O, R, 0, so, 1, {m}, {eps}, i64, p_kw)",
        "        br, bl = _nrm_apply_plan(O, R)",
        "        path, grid = 1, (_cdiv(O, br) * _cdiv(R, bl),)",
        f"        args = (O, R, so, O, 1, 1, {eps})",
        "        kw = " + g.kw("SIDX=0, AFF=2, FROM_RUNNING=False, BLOCK_R=br, BLOCK_L=bl"),
        "else:",
        "    one, br, bi = _nrm_col_plan(R, I)",
        "    path, grid = 2, (O * _cdiv(I, bi),)",
        f"    args = (O, R, I, so, sr, si, yo, yr, yi, {eps})",
        "    kw = " + g.kw(f"MODE={m}, ONE_PASS=one, BLOCK_R=br, BLOCK_I=bi")]
    launches = ["if path == 1:",
                "    " + g.stats(k["stats"]),
                "    " + g.call(k["apply"], [g.x, "y", "stats", g.w, g.b, "stats", "stats"]),
                "else:",
                "    " + g.call(f"{k['col']} if path == 2 else {k['row']}", [g.x, "y", g.w, g.b])]
    return plan, launches


def _grouped_launcher(g: _Launcher, k: dict[str, str]) -> tuple[list[str], list[str]]:
    """group_norm / instance_norm (rows in registers or two-level) and batch_norm (two-level in
    training, one elementwise pass with the running statistics in eval). Returns (plan body,
    launcher launches)."""
    spec = g.spec
    eps = repr(spec.eps)
    # Conv outputs are contiguous already; anything else pays one copy for coalesced passes.
    plan = [] if g.ch.pro else ["x = x.contiguous()"]
    plan += ["N, C = shape[0], shape[1]",
             "HW = y.numel() // (N * C)"]
    apply_grid = "(_cdiv(N * C, br) * _cdiv(HW, bl),)"
    apply_head = [g.x, "y", "stats", g.w, g.b, "stats", "stats"]
    if spec.kind == "batch_norm":
        plan += ["br, bl = _nrm_apply_plan(N * C, HW)",
                 f"grid, args = {apply_grid}, (N * C, HW, HW, C, C, 1, {eps})"]
        if spec.training:
            mom = "None" if spec.momentum is None else repr(spec.momentum)
            running = spec.running_mean is not None and spec.running_var is not None
            plan += [f"sp = _nrm_stats_prep(N, C, HW, C * HW, HW, 1, 0, {eps}, i64, p_kw, {running}, "
                     f"{spec.nbt is not None}, {mom})",
                     "path, kw = 1, " + g.kw("SIDX=1, AFF=1, FROM_RUNNING=False, BLOCK_R=br, BLOCK_L=bl")]
            return plan, [g.stats(k["stats"], ", rm, rv, nbt"), g.call(k["apply"], apply_head)]
        plan += ["path, kw = 3, " + g.kw("SIDX=1, AFF=1, FROM_RUNNING=True, BLOCK_R=br, BLOCK_L=bl")]
        return plan, [g.call(k["apply"], [g.x, "y", "y", g.w, g.b, "rm", "rv"])]
    groups = str(spec.groups) if spec.kind == "group_norm" else "C"
    plan += [f"G = {groups}",
             "cpg = C // G",
             "rows, R = N * G, cpg * HW",
             f"if R <= {ROW_MAX}:",
             "    path, grid = 0, lambda meta: (_cdiv(rows, meta['ROWS']),)",
             f"    args = (rows, R, R, {eps}, G, cpg, HW)",
             "    kw = " + g.kw("MODE=0, AFF=1, BLOCK=_npow2(R)"),
             "else:",
             f"    sp = _nrm_stats_prep(1, rows, R, 0, R, 1, 0, {eps}, i64, p_kw)",
             "    br, bl = _nrm_apply_plan(N * C, HW)",
             f"    path, grid = 1, {apply_grid}",
             f"    args = (N * C, HW, HW, rows, C, cpg, {eps})",
             "    kw = " + g.kw("SIDX=0, AFF=1, FROM_RUNNING=False, BLOCK_R=br, BLOCK_L=bl")]
    launches = ["if path == 1:",
                "    " + g.stats(k["stats"]),
                "    " + g.call(k["apply"], apply_head),
                "else:",
                "    " + g.call(k["row"], [g.x, "y", g.w, g.b])]
    return plan, launches
