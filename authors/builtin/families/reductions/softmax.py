"""Softmax / log-softmax over any dim, with a pointwise prologue and epilogue fused.

Three modes, chosen by the launcher from the run-time sizes:
- 0, the row fits one tile (next_power_of_2(K) <= `single`): load once, max, exp, sum, store --
  one read and one write of the tensor;
- 1, longer rows: one pass keeps per-lane online (max, sum of exp), a second pass normalizes
  (the row was read moments ago, so the second read mostly hits L2);
- 2, few very long rows: the generic split reduction writes (max, sum) partials per chunk, then
  every chunk program merges its row's partials and normalizes its chunk.
Row tiles when the softmax dim is contiguous, column tiles along the contiguous kept dim
otherwise (softmax over channels of NCHW data).
"""

from __future__ import annotations

from ...frontend.ir import Region
from ...runtime import COLLAPSE, REDUCTIONS_RUNTIME
from ...templates.base import EmitContext, Emitted
from ...templates.launch import plan_lookup
from ..pointwise.codegen import ChainCode, external_inputs
from .codegen import (
    ALIGN_LINES,
    Layout,
    RedSpec,
    _autotune,
    _ind,
    _params,
    align_consts,
    main_kernel,
    operand_params,
    tile_values,
)
from .reducers import Gen, _lse

# Rationale (H200): a row of up to 32768 fp32 (128 KB) stays in registers with 16-32 warps
# (64 or 32 values per thread), so 32000-way vocabularies take the one-read path; longer rows
# loop in 4096-element steps, whose second read comes from the 60 MB L2.
SOFTMAX_DEFAULTS = {"single": 32768, "tile": 4096, "kmax": 4096, "imax": 128, "split": 0, "chunk": 0,
                    "waves": 4,
                    "warps": [(8, 1), (4, 1), (16, 1), (32, 1)]}


def _softmax_kernel(spec: RedSpec, name: str, col: bool, chain: ChainCode | None, log: bool,
                    warps: list) -> str:
    lay, a = Layout(col), (0 if col else 1)
    n_ops = len(spec.operands)
    plain = (["out0", "ws0", "ws1"] + [f"x{j}" for j in range(n_ops)]
             + ["M", "K", "I", "O1", "K1", "I1", "CH", "NSPLIT", "OS_O", "OS_K", "OS_I"]
             + operand_params(n_ops) + (chain.kernel_params() if chain else []))
    const = [f"{c}: tl.constexpr" for c in ("O2", "K2", "I2", "I64", "MODE", "BLOCK_R", "BLOCK_K", "AO")]
    const += align_consts(n_ops)
    loads, vals = tile_values(spec, lay)
    v = vals[0]

    def ex(e: str) -> str:
        return f"tl.expand_dims({e}, {a})"

    if col:
        store = ["oo = (bo * _red_hint(OS_O, AO) + ks * _red_hint(OS_K, AO))[:, None] "
                 "+ (bi * OS_I)[None, :]"]
    else:
        store = ["oo = ob[:, None] + (ks * OS_K)[None, :]"]
    if chain is not None:
        lines, var = chain.kernel_body("y", "oo", "mask")
        store += lines + [f"y = {var}"]
    store.append("tl.store(out0 + oo, y, mask=mask)")
    single = lay.k_step("0") + loads + [
        f"xv = tl.where(mask, {v}, float('-inf'))", f"mx = tl.max(xv, axis={a})",
        f"ez = tl.exp(xv - {ex('mx')})", f"sz = tl.sum(ez, axis={a})",
        f"y = xv - {ex('mx')} - {ex('tl.log(sz)')}" if log else f"y = ez / {ex('sz')}"] + store
    lse = _lse()
    looped = ["s0 = tl.full(" + lay.shape + ", float('-inf'), tl.float32)",
              "s1 = tl.full(" + lay.shape + ", 0.0, tl.float32)",
              "for k0 in range(0, K, BLOCK_K):"]
    looped += _ind(lay.k_step("k0") + loads + lse.update(Gen(vals=[v]), ["s0", "s1"]))
    looped += lse.cross_lanes(["s0", "s1"], ["r0", "r1"], a) + ["k_lo = 0", "k_hi = K"]
    merged = ["r0 = tl.load(ws0 + rows, mask=rmask, other=float('-inf'))",
              "r1 = tl.load(ws1 + rows, mask=rmask, other=0.0)",
              "for sp in range(1, NSPLIT):",
              "    t0 = tl.load(ws0 + sp * M + rows, mask=rmask, other=float('-inf'))",
              "    t1 = tl.load(ws1 + sp * M + rows, mask=rmask, other=0.0)",
              "    r0, r1 = _red_lse(r0, r1, t0, t1)",
              "k_lo = sid * ((CH // BLOCK_K) * BLOCK_K)", "k_hi = tl.minimum(k_lo + CH, K)"]
    # The normalizing pass walks the row backwards: its end, read last by the first pass, is the
    # part most likely still in L2.
    norm = ["lz = _red_lse_shift(r0) + tl.log(r1)", "nblk = tl.cdiv(k_hi - k_lo, BLOCK_K)",
            "for it in range(0, nblk):"]
    norm += _ind(["k0 = k_lo + (nblk - 1 - it) * BLOCK_K"] + lay.k_step("k0") + loads + [
        f"y = {v} - {ex('lz')}" if log else f"y = tl.exp({v} - {ex('lz')})"] + store)
    body = lay.index(n_ops)
    body += [] if col else ["ob = bo * _red_hint(OS_O, AO) + bi * _red_hint(OS_I, AO)"]
    body += ["if MODE == 0:"] + _ind(single)
    body += ["else:"] + _ind(["if MODE == 1:"] + _ind(looped) + ["else:"] + _ind(merged) + norm)
    return (_autotune(warps, ["M", "K", "I"]) + f"def {name}({', '.join(plain + const)}):\n"
            + "\n".join(_ind(body)))


def emit_softmax(region: Region, ctx: EmitContext, operands: list, dim: int, log: bool) -> Emitted:
    ctx.share("collapse", COLLAPSE)
    ctx.share("reductions", REDUCTIONS_RUNTIME)
    p = _params(ctx, SOFTMAX_DEFAULTS)
    a = region.anchor
    chain = ChainCode(region.epilogue, a.out, prefix="e") if region.epilogue else None
    # Stage 1 of mode 2 is the generic split reduction with the log-sum-exp reducer.
    stats = RedSpec(operands=operands, dims=[dim], keepdim=False, reducer=_lse(), vals=[a.inputs[0].name],
                    prologue=list(region.prologue))
    krow, kcol = ctx.name("softmax_row_kernel"), ctx.name("softmax_col_kernel")
    srow, scol, lname = ctx.name("softmax_stats_row"), ctx.name("softmax_stats_col"), ctx.name("softmax")
    kernels = [_softmax_kernel(stats, krow, False, chain, log, p["warps"]),
               _softmax_kernel(stats, kcol, True, chain, log, p["warps"]),
               main_kernel(stats, srow, False, None, [(8, 1), (4, 1)]),
               main_kernel(stats, scol, True, None, [(8, 1), (4, 1)])]
    n_ops = len(operands)
    args = [f"a{j}" for j in range(n_ops)]
    eargs = [f"c{i}" for i in range(len(chain.ext))] if chain else []
    out_dt = str((region.epilogue[-1].out if region.epilogue else a.out).meta.dtype)
    plans = ctx.name("plans")
    # The launch plan depends on the operands' shapes and strides only: computed once per
    # signature (see families/reductions/codegen.py's emit_reduction).
    P = [f"def {lname}_plan(ops, dev):",
         "    shape = list(_bshape(*[t.shape for t in ops]))",
         "    n = 1",
         "    for s in shape:",
         "        n *= s",
         "    if n == 0:",
         "        return (shape, 0, 0, False, 0, 1, (), (), {}, {}, [], []), ops",
         f"    ops, (O, O1, O2), (K, K1, K2), (I, I1, I2), st, swapped = _red_layout(shape, [{dim}], ops)",
         "    # Output strides of the (o, k, i) roles: contiguous in the logical order.",
         "    OS = (0, 1, K) if swapped else (K * I, I, 1)",
         "    M, i64 = O * I, _i64(*ops, n=math.prod(shape))",
         "    big = max(range(len(ops)), key=lambda j: ops[j].numel())",
         "    col = I > 1 and st[big][5] == 1 and st[big][3] != 1",
         "    KP = _npow2(max(K, 1))",
         f"    mode = 0 if KP <= {p['single']} else 1"]
    if p["chunk"]:
        P += [f"    mode = 1 if K > {p['chunk']} else mode"]
    P += ["    if col:",
          f"        BR = min(_npow2(I), {p['imax']})",
          "        if mode == 0:",
          f"            BK, BR = KP, max(1, min(BR, {p['tile']} // KP))",
          "        else:",
          f"            BK = max(1, min({p['tile']} // BR, KP, {p['kmax']}))",
          "        progs = O * _cdiv(I, BR)",
          "    else:",
          f"        BK = KP if mode == 0 else min(KP, {p['kmax']})",
          f"        BR = max(1, min(_npow2(M), {p['tile']} // BK))",
          "        progs = _cdiv(M, BR)",
          "    split, CH = 1, K",
          "    nk = _cdiv(K, BK)"]
    if p["chunk"]:
        P += [f"    split = _cdiv(K, {p['chunk']}) if mode == 1 else 1"]
    elif p["split"]:
        P += [f"    split = min({p['split']}, nk) if mode == 1 else 1"]
    else:
        P += ["    sms = _sms(dev, 4)",
              "    if mode == 1 and progs < sms and nk >= 8:",
              f"        split = min(_cdiv({p['waves']} * sms, progs), _cdiv(nk, 4))"]
    P += ["    split = max(1, min(split, nk))"] + ALIGN_LINES
    P += ["    AO = _red_align(OS[0], OS[1]) if col else _red_align(OS[0], OS[2])",
          "    if split > 1:",
          "        CH = _cdiv(nk, split) * BK",
          "        split = _cdiv(K, CH)",
          "        mode = 2",
          "    stv = [s for t in st for s in t]",
          "    kw = dict(O2=O2, K2=K2, I2=I2, I64=i64, BLOCK_R=BR, BLOCK_K=BK, **al)",
          "    return (shape, M, mode, col, progs, split, (M, K, I, O1, K1, I1, CH, 1.0, *stv),",
          "            (M, K, I, O1, K1, I1, CH, split, *OS, *stv), dict(kw, SPLIT=True),",
          "            dict(kw, AO=AO, MODE=mode), [], []), ops"]
    L = [f"{plans} = {{}}", "", "",
         f"def {lname}({', '.join(args + eargs)}):",
         f"    ops = [{', '.join(args)}]",
         *plan_lookup(plans, lname, n_ops),
         "    shape, M, mode, col, progs, split, sargs, margs, skw, mkw, spick, pick = plan",
         f"    out0 = torch.empty(shape, device=ops[0].device, dtype={out_dt})",
         "    if M == 0:",
         "        return out0",
         "    if mode == 2:",
         "        ws0 = torch.empty((split, M), device=out0.device, dtype=torch.float32)",
         "        ws1 = torch.empty((split, M), device=out0.device, dtype=torch.float32)",
         f"        _launch({scol} if col else {srow}, (progs, split), spick, "
         "(out0, ws0, ws1, out0, out0, *ops, *sargs), skw)",
         "    else:",
         "        ws0 = ws1 = out0"]
    if chain:
        L += _ind(chain.launch_prelude("shape", eargs))
    else:
        L += ["    e_args, e_kw = [], {}"]
    L += [f"    _launch({kcol} if col else {krow}, (progs, split), pick, "
          "(out0, ws0, ws1, *ops, *margs, *e_args), {**mkw, **e_kw})",
          "    return out0"]
    ext = [v.name for v in operands] + ([v.name for v in chain.ext] if chain else [])
    return Emitted(kernels=kernels, helpers=["\n".join(P), "\n".join(L)],
                   lines=[f"{region.output().name} = {lname}({', '.join(ext)})"])


__all__ = ["SOFTMAX_DEFAULTS", "emit_softmax", "external_inputs"]
