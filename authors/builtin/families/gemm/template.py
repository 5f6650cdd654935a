"""The GEMM template family's shared template class: matching linear / matmul / bmm regions and
emitting the kernel(s) of families/gemm/kernels.py plus a launcher.

Skill folders (gemm-epilogue-fusion, gemm-tf32x3-strict-fp32, gemm-tile-shapes, ...) subclass
`GemmTemplate` and change its configs, precision, or launch strategy (split-K, an FMA path for
matrix-vector shapes). Every variant fuses the region's pointwise epilogue into the store.

Match decides from kinds, ranks and dtypes only; sizes are read by the launcher at run time, so
a candidate captured at SMALL size runs unchanged at full size.
"""

from __future__ import annotations

from dataclasses import replace

from ...frontend.ir import Op, Region
from ...runtime import COLLAPSE, GEMM_PREP, GEMM_RUNTIME
from ...runtime.gemm_prep import _GEMM_SCALE_K as SCALE_K
from ...templates.base import EmitContext, Emitted, Template
from ...templates.launch import plan_key
from .kernels import GemmChain, KernelOpts, kernel_source, reduce_source
from .match import (
    _F16_ROW_RULE,
    _F16_ROWS,
    DEFAULT_CONFIGS,
    GEMV_CONFIGS,
    PREP16_CONFIGS,
    PREP_CONFIGS,
    SMALL_DIM,
    chain_ok,
    gemm_ok,
    precision,
)

# The three-dot twins of a kernel: (name suffix, kernel name tag, KernelOpts changes) for `prep` 1,
# 2 and 3 of the launcher.
_TWINS = (("prep", "3xf16", dict(prep=True, f16=True)),
          ("prepb", "3xtf32_split_a", dict(prep=True, split_a=True)),
          ("prept", "3xtf32_split_a_t", dict(prep=True, split_a=True, swap=True)))


class GemmTemplate(Template):
    kinds = ("linear", "matmul", "bmm")
    supports_epilogue = True
    runtime_scalars = True
    configs = DEFAULT_CONFIGS
    tf32 = True
    """Use one-pass TF32 when the run's policy allows it (strict fp32: tf32x3 always)."""
    rank1 = False
    """Accept matrix-vector forms (a rank-1 operand)."""
    split_k = True
    """Split K at run time when the output has fewer tiles than ~two waves of SMs and K is long
    (gemm-split-k's rule): the choice needs full sizes, which only the launcher sees."""
    prep_configs = PREP_CONFIGS
    """Tile configurations of the kernels with one side prepared as TF32 parts (runtime/gemm_prep.py)."""
    prep16_configs = PREP16_CONFIGS
    """Tile configurations of the kernel on both operands prepared as fp16 parts."""
    small_dim = True
    """Route M or N <= SMALL_DIM (a column vector, a few rows) to a CUDA-core FMA kernel at run
    time: a tensor-core tile is >= 16 wide, so there it would be mostly padding."""
    fold = True
    """Fold A's batch into M when B is one matrix (off when the kernel needs per-matrix rows)."""
    params = {"input_precision": ["tf32x3", "ieee"], "f16_scales": ["auto", "row", "chunk"]}
    # A prepared GEMM costs five host launches (two bounds, two preparations, the autotuned kernel
    # of ~25 arguments), all issued before the kernel that does the work can start. Measured on an
    # H200 under the timing protocol (session 15, default candidates, plain -> replayed): level1/01
    # 1.02 -> 0.81 ms, level1/03 0.65 -> 0.54, level2/04 0.83 -> 0.60, level2/13 0.95 -> 0.75,
    # level2/16 0.77 -> 0.57, level3/01 1.16 -> 1.02, level3/06 3.69 -> 2.02, level3/13 2.64 -> 2.18.
    graph_replay = "cuda-graph-replay"

    def match(self, region: Region) -> bool:
        op = region.anchor
        return (op is not None and op.kind in self.kinds and not region.prologue and gemm_ok(op, self.rank1)
                and chain_ok(region.epilogue))

    # ---- variant hooks ----------------------------------------------------------------------
    def kernel_opts(self, region: Region, ctx: EmitContext) -> KernelOpts:
        op = region.anchor
        return KernelOpts(precision=precision(ctx, self.tf32),
                          has_bias=op.kind == "linear" and op.attrs.get("bias") is not None)

    def config_list(self, ctx: EmitContext) -> list[tuple[dict, int, int]]:
        return ctx.params.get("configs") or self.configs

    def prep_config_list(self, ctx: EmitContext, f16: bool = False) -> list[tuple[dict, int, int]]:
        if f16:
            return ctx.params.get("prep16_configs") or self.prep16_configs
        return ctx.params.get("prep_configs") or self.prep_configs

    def f16_scales(self, ctx: EmitContext) -> str:
        """Scales of fp16 operand parts: "auto" (by output size, _F16_ROW_RULE), "row" or "chunk"."""
        p = ctx.params.get("f16_scales", "auto")
        return p if p in _F16_ROWS else "auto"

    # ---- emission ---------------------------------------------------------------------------
    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        ctx.share("collapse", COLLAPSE)
        ctx.share("gemm_runtime", GEMM_RUNTIME)
        op = region.anchor
        out = region.output()
        if [v.name for v in region.outputs] not in ([], [out.name]):
            raise ValueError(f"GEMM region at {op.out.name}: intermediates escape the fused epilogue")
        chain = GemmChain(region.epilogue, op.out) if region.epilogue else None
        opts = self.kernel_opts(region, ctx)
        kname, lname = ctx.name("gemm_kernel"), ctx.name("gemm")
        kernels = [kernel_source(kname, opts, chain, self.config_list(ctx))]
        names = {"main": kname}
        if opts.precision == "tf32x3":
            ctx.share("gemm_prep", GEMM_PREP)
            kernels += self._three_dot_twins("main", "gemm", opts, chain, ctx, names)
        elif opts.precision == "tf32":  # K-major copies only: the same kernel reads them
            ctx.share("gemm_prep", GEMM_PREP)
        if self.split_k:
            names["part"], names["reduce"] = ctx.name("gemm_splitk_kernel"), ctx.name("gemm_splitk_reduce")
            part = replace(opts, split=True)
            kernels += [kernel_source(names["part"], part, None, self.config_list(ctx)),
                        reduce_source(names["reduce"], opts.has_bias, chain)]
            if "main_prep" in names:
                kernels += self._three_dot_twins("part", "gemm_splitk", part, None, ctx, names)
        if self.small_dim:
            names["rows"], names["cols"] = ctx.name("gemv_kernel"), ctx.name("gemv_t_kernel")
            fma = replace(opts, inner="fma")
            kernels += [kernel_source(names["rows"], fma, chain, GEMV_CONFIGS),
                        kernel_source(names["cols"], replace(fma, swap=True), chain,
                                      GEMV_CONFIGS)]
        ext = chain.ext if chain is not None else []
        scalars = chain.scalars if chain is not None else []
        helpers = self.launcher(lname, op, opts, chain, names, len(ext), _F16_ROWS[self.f16_scales(ctx)])
        args = [v.name for v in op.tensor_inputs()] + [v.name for v in ext] + [v.name for v in scalars]
        line = f"{out.name} = {lname}({', '.join(args)})"
        return Emitted(kernels=kernels, helpers=helpers, lines=[line])

    def launcher(self, lname: str, op: Op, opts: KernelOpts, chain: GemmChain | None, names: dict[str, str],
                 n_ext: int, rows_rule: str = _F16_ROW_RULE) -> list[str]:
        """The launcher `lname` and its plan function (generated sources). The plan (_GemmPlan) holds
        every launch decision that depends on the operands' sizes, strides, dtypes and device only:
        computed once per operand signature on meta tensors (_gemm_new_plan), so that a call costs
        a dict lookup, the operands' views, the allocations, the preparation passes (they read the
        data) and launches with the autotuner's kept pick (_launch). The timing protocol counts
        host time: replanning cost a matrix-vector GEMM ~70-96 us per call on an H200."""
        ext = [f"e{i}" for i in range(n_ext)]
        scalars = [f"k{j}" for j in range(len(chain.scalars))] if chain is not None else []
        ops = ["a", "b", *(["bias"] if opts.has_bias else []), *ext]
        dtype = (chain.ops[-1].out if chain is not None else op.out).meta.dtype
        # The epilogue operands' row-dim counts are constexprs of the kernels (GemmChain.kernel_params).
        rr = {e: f"{chain.p}_RR{i}" for i, e in enumerate(ext)}  # (no ext without a chain)
        return [self._planner(lname, op, opts, names, ops, rr, dtype, rows_rule),
                self._caller(lname, opts, names, ops, ext, scalars, dtype)]

    def _planner(self, lname: str, op: Op, opts: KernelOpts, names: dict[str, str], ops: list[str],
                 ext: dict[str, str], dtype: object, rows_rule: str) -> str:
        """`{lname}_plan(ops, dev) -> (plan, the GEMM's operands)`: the launch decisions, taken on meta
        operands (or, where their layout copies one, on the operands themselves at each call). `ext`:
        epilogue operand -> its kernels' row-dim constexpr. The text names no launcher, so that
        identical regions still share one (emit.dedupe)."""
        x3, twins = opts.precision == "tf32x3", "main_prep" in names
        s_bias = "bias.stride(0)" if opts.has_bias else "0"
        kw = "dict(e_kw, " if ext else "dict("
        big = "_i64(a, b, c, *e_ops)" if ext else "_i64(a, b, c)"
        gemm = f"_gemm_plan(a, b, {op.kind == 'linear'}, {self.fold})"
        body = [f"{', '.join(ops)} = ops",
                f"a, b, M, N, K, d0, d1, out_shape, gshape = {gemm}",
                "p = _GemmPlan(out_shape, ops[:2], (a, b))",
                f'c = torch.empty(out_shape, device="meta", dtype={dtype})',
                "if c.numel() == 0:",
                f"    return p, [{', '.join(['a', 'b', *ext])}]"]
        if ext:
            body.append("e_ops, e_kw = [], {}")
            for name, rr in ext.items():
                body += [f"t, geo, e_kw['{rr}'] = _gemm_ext({name}, out_shape, gshape)",
                         "e_ops.append(t)",
                         "p.eg.append(geo)"]
        body += ["laid = [a, b, *e_ops]" if ext else "laid = [a, b]",
                 f"i64 = {big}",
                 "nb = d0[0] * d1[0]"]
        if self.small_dim:
            body += [
                f"if min(M, N) <= {SMALL_DIM}:",
                "    # Matrix-vector shape: CUDA-core kernel over the large operand, the small",
                "    # dimension in one BLOCK_N (for small M it computes C^T = B^T A^T).",
                "    rows = M if N < M else N",
                "    p.gemv, p.swap = True, N >= M",
                "    p.grid = lambda meta: (nb * _cdiv(rows, meta['BLOCK_M']),)",
                *self._plan_args(f", {s_bias}, K", "N >= M", "    "),
                f"    p.kw = {kw}I64=i64, BLOCK_N=_npow2(min(M, N)))",
                "    return p, laid"]
        if opts.precision in ("tf32x3", "tf32"):
            body += self._plan_prep(x3, big, rows_rule)
        if self.split_k:
            part_twins = "part_prep" in names
            row = "dict(I64=big, ROW_SCALES=p.row_scaled) if prep == 1 else dict(I64=big)"
            body += [
                "# Rationale: with fewer output tiles than ~2 waves of SMs and a long K, split K into",
                "# chunks of >= 1024 (>= 32 BLOCK_K steps keep the pipeline full) so every SM works.",
                "split = min(2 * _sms(dev, 132) // (nb * _cdiv(M, 128) * _cdiv(N, 128)), K // 1024, 32)",
                "if split >= 2:",
                "    chunk = _cdiv(_cdiv(K, split), 128) * 128",
                "    split = _cdiv(K, chunk)",
                "if split >= 2:",
                "    total = c.numel()",
                '    big = i64 or _i64(torch.empty((split, total), device="meta"))',
                "    p.split = split",
                *self._plan_grid("split * nb", part_twins, "    "),
                *self._plan_args(", 0, chunk", "prep == 3" if part_twins else None, "    "),
                f"    p.kw = {row if part_twins else 'dict(I64=big)'}",
                "    p.rgrid = lambda meta: (_cdiv(total, meta['BLOCK']),)",
                f"    p.rargs = (total, N, split, {s_bias})",
                f"    p.rkw = {kw}I64=big)",
                "    return p, laid"]
        main_kw = f"{kw}I64=i64, ROW_SCALES=p.row_scaled) if prep == 1 else {kw}I64=i64)" if twins \
            else f"{kw}I64=i64)"
        body += [*self._plan_grid("nb", twins),
                 *self._plan_args(f", {s_bias}, K", "prep == 3" if twins else None),
                 f"p.kw = {main_kw}",
                 "return p, laid"]
        doc = ['    """The launch plan (_GemmPlan) of the launcher this function is named after, for the',
               "    sizes, strides, dtypes and device `dev` of its operands `ops` (a, b, bias, epilogue",
               "    operands); returns it and the GEMM's operands (its views of a and b, the epilogue",
               '    operands as the kernels read them)."""']
        return f"def {lname}_plan(ops, dev):\n" + "\n".join([*doc, *("    " + ln for ln in body)])

    @staticmethod
    def _plan_prep(x3: bool, big: str, rows_rule: str) -> list[str]:
        """Planner lines of the operand preparation (runtime/gemm_prep.py): its mode and, per copied operand,
        _gemm_prep's plan; the GEMM's operands are then the copies (meta tensors of their layout)."""
        rows_a, rows_b = (f", {SCALE_K}, M, 1", f", {SCALE_K}, N, 1") if x3 else ("", "")
        return [
            # A copy pays only when each element feeds many outputs, hence the one-side modes for a
            # small N or M; wgmma takes only its left operand from registers, hence C^T for a small M.
            *(["# prep 1: A and B copied K-major as fp16 hi / lo parts (_gemm_prep); 2: only B, as",
               "# TF32 parts, the kernel splits A; 3: only A, the kernel computes C^T = B^T A^T,",
               "# splits B^T",
               "prep = (1 if min(M, N) >= _GEMM_PREP_MIN else 2 if M >= _GEMM_PREP_MIN else 3 "
               "if N >= _GEMM_PREP_MIN else 0) if K else 0"]
              if x3 else ["# prep 1: K-major copies (_gemm_prep), needed only when an operand is not",
                          "prep = int(min(M, N) >= _GEMM_PREP_MIN and "
                          "(a.stride(-1) != 1 or b.stride(-2) != 1))"]),
            "p.prep = prep",
            "if prep:",
            "    # The batch strides follow each copy's [nb, rows, KP] layout; an operand not",
            "    # copied is its own lo part (the kernel splits it or ignores the argument).",
            "    psplit = 2 if prep == 1 else 1" if x3 else "    psplit = 0",
            *(["    # fp16 scales per row of A / column of B over all of K (KernelOpts.f16): the bounds",
               "    # max |x| cost one more read of both operands, which pays on large outputs only",
               "    # (see _F16_ROW_RULE); otherwise per row and 64-wide K chunk.",
               f"    row_scaled = prep == 1 and {rows_rule}",
               "    if row_scaled:",
               "        psplit = 3",
               "    p.row_scaled = row_scaled"]
              if x3 else []),
            "    if prep != 2:",
            f"        kp, p.prep_a = _gemm_prep_plan(a, nb, d1[0], d0[1], d1[1], True, psplit{rows_a})",
            '        a = torch.empty((nb, M, kp), device="meta")',
            "        d0, d1 = [d0[0], d1[0] * M * kp, d0[2]], [d1[0], M * kp, d1[2]]",
            "    if prep != 3:",
            f"        kp, p.prep_b = _gemm_prep_plan(b, nb, d1[0], d0[2], d1[2], False, psplit{rows_b})",
            '        b = torch.empty((nb, N, kp), device="meta").transpose(-1, -2)',
            "        d0, d1 = [d0[0], d0[1], d1[0] * N * kp], [d1[0], d1[1], N * kp]",
            "    if prep == 1:",
            "        K = kp",
            f"    i64 = {big}"]

    @staticmethod
    def _plan_grid(n: str, twins: bool, indent: str = "") -> list[str]:
        """Planner line of a tiled kernel's grid: `n` x the output's tiles (of C^T for `prep` 3)."""
        if twins:
            return [f"{indent}p.grid = _gemm_grid({n}, N, M) if prep == 3 else _gemm_grid({n}, M, N)"]
        return [f"{indent}p.grid = _gemm_grid({n}, M, N)"]

    @staticmethod
    def _plan_args(tail: str, swap: str | None, indent: str = "") -> list[str]:
        """Planner lines of a kernel's size and stride arguments, then `tail`; where the condition
        `swap` holds, those of C^T = B^T A^T (the kernel is launched with the operands exchanged,
        KernelOpts.swap)."""
        plain = ("p.args = (M, N, K, nb, d1[0], d0[1], d1[1], a.stride(-2), a.stride(-1), d0[2], d1[2], "
                 f"b.stride(-2), b.stride(-1){tail})")
        if swap is None:
            return [indent + plain]
        swapped = ("p.args = (N, M, K, nb, d1[0], d0[2], d1[2], b.stride(-1), b.stride(-2), d0[1], d1[1], "
                   f"a.stride(-1), a.stride(-2){tail})")
        return [f"{indent}if {swap}:", f"{indent}    {swapped}", f"{indent}else:", f"{indent}    {plain}"]

    def _caller(self, lname: str, opts: KernelOpts, names: dict[str, str], ops: list[str], ext: list[str],
                scalars: list[str], dtype: object) -> str:
        """The launcher: its operands' plan (planned once per signature), the views, allocations,
        preparation passes and launches of one call."""
        x3 = opts.precision == "tf32x3"
        bias_t = "bias" if opts.has_bias else "c"
        e_parts = [x for i, e in enumerate(ext) for x in (e, f"*p.eg[{i}]")] + scalars
        eargs = ", *e_args" if e_parts else ""
        body = [f"key = {plan_key(ops)}",
                f"p = {lname}.plans.get(key)",
                "if p is None:",
                f"    p = _gemm_new_plan({lname}.plans, key, {lname}_plan)",
                "if p:",
                "    # The GEMM's views of a and b (_gemm_plan): the plan's sizes and strides.",
                "    av, bv = p.views",
                "    a = a.as_strided(*av) if av else a",
                "    b = b.as_strided(*bv) if bv else b",
                "else:  # the layout copies an operand: planned on the operands themselves, each call",
                f"    p, ({', '.join(['a', 'b', *ext])}) = {lname}_plan([{', '.join(ops)}], a.device)",
                f"c = torch.empty(p.out_shape, device=a.device, dtype={dtype})",
                "if c.numel() == 0:",
                "    return c"]
        if e_parts:
            body.append(f"e_args = ({', '.join(e_parts)}{',' if len(e_parts) == 1 else ''})")
        rest = f"c, {bias_t}, *p.args{eargs}"
        if self.small_dim:
            body += ["if p.gemv:",
                     "    # Matrix-vector shape: the CUDA-core kernel, on C^T = B^T A^T for a small M.",
                     "    if p.swap:",
                     f"        _launch({names['cols']}, p.grid, p.pick, (b, a, {rest}), p.kw)",
                     "    else:",
                     f"        _launch({names['rows']}, p.grid, p.pick, (a, b, {rest}), p.kw)",
                     "    return c"]
        if opts.precision in ("tf32x3", "tf32"):
            body += [
                "if p.prep:",
                "    # The operands' K-major copies (_gemm_prep: they read the data).",
                "    al, bl = a, b",
                *(["    ra = rb = None",
                   "    if p.row_scaled:",
                   "        ra = torch.linalg.vector_norm(a, float('inf'), dim=-1).reshape(-1)",
                   "        rb = torch.linalg.vector_norm(b, float('inf'), dim=-2).reshape(-1)"]
                  if x3 else []),
                "    if p.prep != 2:",
                f"        a, al, sa = _gemm_prep_run(a, p.prep_a{', ra' if x3 else ''})",
                *(["        ra = ra if p.row_scaled else sa"] if x3 else []),
                "    if p.prep != 3:",
                f"        b, bl, sb = _gemm_prep_run(b, p.prep_b{', rb' if x3 else ''})",
                *(["        rb = rb if p.row_scaled else sb"] if x3 else []),
                "        b, bl = b.transpose(-1, -2), bl.transpose(-1, -2)"]
        if self.split_k:
            body += ["if p.split:",
                     "    ws = torch.empty((p.split, c.numel()), device=c.device, dtype=torch.float32)",
                     *self._call(names, "part", "ws, ws, *p.args", indent="    "),
                     f"    _launch({names['reduce']}, p.rgrid, p.rpick, (ws, c, {bias_t}, *p.rargs{eargs}), "
                     "p.rkw)",
                     "    return c"]
        body += [*self._call(names, "main", rest),
                 "return c"]
        sig = [*ops, *scalars]
        return (f"def {lname}({', '.join(sig)}):\n" + "\n".join("    " + ln for ln in body)
                + f"\n\n\n{lname}.plans = {{}}  # launch plans per operand signature ({lname}_plan)")

    def _three_dot_twins(self, kind: str, stem: str, opts: KernelOpts, chain: GemmChain | None,
                         ctx: EmitContext, names: dict[str, str]) -> list[str]:
        """The three-dot twins of kernel `kind` (runtime/gemm_prep.py), named into `names` as kind_prep,
        kind_prepb and kind_prept: both operands prepared, only B (A split in registers), only A
        (C^T = B^T A^T with B^T split in registers)."""
        sources = []
        if any(cfg["BLOCK_K"] != SCALE_K for cfg, _, _ in self.prep_config_list(ctx, True)):
            raise ValueError(f"fp16-part GEMM configurations need BLOCK_K = {SCALE_K} (the scale chunk)")
        for suffix, tag, changes in _TWINS:
            names[f"{kind}_{suffix}"] = ctx.name(f"{stem}_{tag}_kernel")
            sources.append(kernel_source(names[f"{kind}_{suffix}"], replace(opts, **changes), chain,
                                         self.prep_config_list(ctx, changes.get("f16", False))))
        return sources

    @staticmethod
    def _call(names: dict[str, str], kind: str, rest: str, indent: str = "") -> list[str]:
        """Launch `names[kind]` on (a, b, rest) with the plan's grid, pick and keywords, or its three-dot
        twins: on prepared fp16 operands (`prep` 1, with their scales ra / rb), splitting A in registers
        (`prep` 2, only B prepared, al = a), or computing C^T with the operands exchanged (`prep` 3,
        only A prepared, bl = b; the plan's grid and arguments are then C^T's). The twins also take the
        lo parts."""
        def launch(kern: str, lead: str) -> str:
            return f"_launch({kern}, p.grid, p.pick, ({lead}, {rest}), p.kw)"

        plain = launch(names[kind], "a, b")
        if f"{kind}_prep" not in names:
            return [indent + plain]
        return [f"{indent}if p.prep == 1:",
                f"{indent}    {launch(names[kind + '_prep'], 'a, b, al, bl, ra, rb')}",
                f"{indent}elif p.prep == 2:",
                f"{indent}    {launch(names[kind + '_prepb'], 'a, b, al, bl')}",
                f"{indent}elif p.prep == 3:",
                f"{indent}    {launch(names[kind + '_prept'], 'b, a, bl, al')}",
                f"{indent}else:",
                f"{indent}    {plain}"]
