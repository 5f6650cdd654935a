"""Softmax / log-softmax over any dim, with a pointwise prologue and epilogue fused.

Three modes, chosen from the run-time sizes (runtime/reductions.py's _red_sm_plan):
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
from ..pointwise.codegen import ChainCode, external_inputs
from .codegen import (
    Layout,
    RedSpec,
    _autotune,
    _ind,
    _params,
    align_consts,
    keywords,
    main_kernel,
    operand_params,
    planner_params,
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
    # log: (x - shift) - log(s), PyTorch's order: x - (shift + log(s)) rounds to the shift's ulp
    # first, an error 15x PyTorch's own on a confident row's top log-probability (near -3e-4).
    norm = ["lsh = _red_lse_shift(r0)", "ls = tl.log(r1)", "lz = lsh + ls",
            "nblk = tl.cdiv(k_hi - k_lo, BLOCK_K)", "for it in range(0, nblk):"]
    norm += _ind(["k0 = k_lo + (nblk - 1 - it) * BLOCK_K"] + lay.k_step("k0") + loads + [
        f"y = ({v} - {ex('lsh')}) - {ex('ls')}" if log else f"y = tl.exp({v} - {ex('lz')})"] + store)
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
    args = [f"a{j}" for j in range(len(operands))]
    eargs = [f"c{i}" for i in range(len(chain.ext))] if chain else []
    out_dt = str((region.epilogue[-1].out if region.epilogue else a.out).meta.dtype)
    plans = ctx.name("plans")
    # The launch plan depends on the operands' shapes and strides only: computed once per
    # signature (runtime reductions._red_sm_plan, as emit_reduction's _red_plan).
    params = {"single": p["single"], **planner_params(p)}
    launcher = [f"{plans} = {{}}", "", "",
                f"def {lname}({', '.join(args + eargs)}):",
                f"    return _red_sm_run({plans}, ({krow}, {kcol}, {srow}, {scol}),",
                f"                       [{', '.join(args)}], [{', '.join(eargs)}], {out_dt}, {dim},",
                f"                       {params!r}{keywords({'chain': chain is not None})})"]
    ext = [v.name for v in operands] + ([v.name for v in chain.ext] if chain else [])
    return Emitted(kernels=kernels, helpers=["\n".join(launcher)],
                   lines=[f"{region.output().name} = {lname}({', '.join(ext)})"])


__all__ = ["SOFTMAX_DEFAULTS", "emit_softmax", "external_inputs"]
