"""Kernels and launchers for reductions over any dims of broadcast / strided operands.

A launcher is one call of runtime/reductions.py's _red_run, whose plan (_red_plan) views the
reduced space as O x K x I (_red_layout) and picks:
- row tiles [BLOCK_R rows, BLOCK_K] when the reduced dims are contiguous in memory (x.sum(-1),
  rows of losses), several rows per program when rows are short;
- column tiles [BLOCK_K, BLOCK_R] walking the contiguous kept dim when the reduced dim is strided
  (x.sum(0), reductions over channels of NCHW data), so loads stay coalesced;
- a split of K across programs when rows (or column strips) are too few to fill the GPU, with
  fp32 partial states in a workspace and a small combine kernel (deterministic: no atomics).
Pointwise prologues are computed on the loaded tiles; epilogues on the reduced values before the
store (ChainCode). Per-row results may also be reduced to a scalar (losses' 'mean' / 'sum').
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...frontend.ir import Op, Value
from ...runtime import COLLAPSE, REDUCTIONS_RUNTIME
from ...templates.base import EmitContext, Emitted
from ...templates.launch import autotune
from ..pointwise.codegen import ChainCode, chain_statements, tuple_literal
from .reducers import Gen, Reducer

_LOW = ("torch.float16", "torch.bfloat16")

# Rationale (H200: 132 SMs, 4.3 TB/s): a 4096-element fp32 tile per program and loop step is
# 16 KB in flight per program -- with 2-4 resident programs per SM that covers the ~32 KB per SM
# that DRAM latency x bandwidth asks for; 128 contiguous columns make 512 B rows in column tiles.
# Splitting K starts when programs < SMs and gives ~4 programs per SM.
DEFAULTS = {"tile": 4096, "kmax": 4096, "imax": 128, "split": 0, "chunk": 0, "waves": 4,
            "warps": [(8, 1), (4, 1), (16, 1), (8, 3)]}


@dataclass
class RedSpec:
    operands: list[Value]
    """Tile operands, loaded over the reduced space (broadcasting to it)."""
    dims: list[int]
    keepdim: bool
    reducer: Reducer
    vals: list[str]
    """Value names the reducer reads (main value first): operands or prologue results."""
    prologue: list[Op] = field(default_factory=list)
    epilogue: list[Op] = field(default_factory=list)
    anchor_out: Value | None = None
    out_dtypes: list[str] = field(default_factory=lambda: ["torch.float32"])
    unsqueeze: tuple[int, int] | None = None
    """(operand, dim): the launcher unsqueezes that argument at dim (targets or labels, constant
    along K, get the reduced dim back); the others are tile operands as they are."""
    tuple_type: str | None = None
    """'max' / 'min': results returned as torch.return_types.<t> (values, indices)."""
    scalar: str | None = None
    """'sum' / 'mean': per-row results reduced to a 0-dim tensor ('mean' divides by the count)."""
    div: int | None = None
    """What per-row means divide by: K, or this dim's size in the broadcast shape (batchmean: 0)."""
    count: str = "1.0"
    """Kernel expression: how much a row counts towards a scalar 'mean' (per row)."""
    extra_fin: list[str] = field(default_factory=list)
    """Kernel statements run before finalize (e.g. a gather of a row's target logit)."""
    row_ops: tuple[int, ...] = ()
    """Operands constant along K (e.g. class targets): loaded once per row by extra_fin, not per tile."""


def _ind(lines: list[str], n: int = 1) -> list[str]:
    return ["    " * n + ln for ln in lines]


def _cast(v: Value) -> str:
    return ".to(tl.float32)" if str(v.meta.dtype) in _LOW else ""


class Layout:
    """Index setup and tile loads of one orientation (row tiles or column tiles)."""

    def __init__(self, col: bool):
        self.col = col
        self.axis = 0 if col else 1
        self.shape = "[BLOCK_K, BLOCK_R]" if col else "[BLOCK_R, BLOCK_K]"

    def r(self, e: str) -> str:
        e = e if e.isidentifier() else f"({e})"
        return f"{e}[None, :]" if self.col else f"{e}[:, None]"

    def k(self, e: str) -> str:
        e = e if e.isidentifier() else f"({e})"
        return f"{e}[:, None]" if self.col else f"{e}[None, :]"

    def index(self, n_ops: int) -> list[str]:
        """Defines pid, sid, rows (flat output index), rmask, bo/bi and operand bases b{j}."""
        if self.col:
            lines = ["pid = tl.program_id(0)", "sid = tl.program_id(1)", "nib = tl.cdiv(I, BLOCK_R)",
                     "bo = pid // nib", "bi = (pid % nib) * BLOCK_R + tl.arange(0, BLOCK_R)",
                     "rmask = bi < _red_hint(I, AI)",
                     "if I64:", "    bo = bo.to(tl.int64)", "    bi = bi.to(tl.int64)", "rows = bo * I + bi"]
        else:
            lines = ["pid = tl.program_id(0)", "sid = tl.program_id(1)",
                     "rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)", "rmask = rows < M",
                     "if I64:", "    rows = rows.to(tl.int64)", "bo = rows // I", "bi = rows % I"]
        for j in range(n_ops):
            # A{j}: a power of two dividing the strides of the offsets that are not contiguous in
            # the tile (launcher); hinted strides let aligned rows load with vector instructions.
            hinted = (0, 1, 2, 3) if self.col else (0, 1, 4, 5)
            lines += [f"t{j}_{d} = _red_hint(x{j}_s{d}, A{j})" for d in hinted]
            if self.col:
                lines += [f"bo{j} = _red_off(bo, O1, t{j}_0, t{j}_1, O2)",
                          f"bi{j} = _red_off(bi, I1, x{j}_s4, x{j}_s5, I2)", f"b{j} = bo{j} + bi{j}"]
            else:
                lines.append(f"b{j} = _red_off(bo, O1, t{j}_0, t{j}_1, O2) "
                             f"+ _red_off(bi, I1, t{j}_4, t{j}_5, I2)")
        return lines

    def k_step(self, k0: str) -> list[str]:
        # Chunks of a split are whole multiples of BLOCK_K, so `ks < K` is the only bound a step
        # needs; AK (a power of two dividing K) keeps the mask uniform over vector loads.
        return [f"ks = {k0} + tl.arange(0, BLOCK_K)", "kmask = ks < _red_hint(K, AK)",
                "if I64:", "    ks = ks.to(tl.int64)",
                f"mask = {self.r('rmask')} & {self.k('kmask')}"]

    def loads(self, operands: list[Value], names: dict[str, str], skip: tuple[int, ...] = ()) -> list[str]:
        out = []
        for j, v in enumerate(operands):
            if j in skip:
                continue
            if self.col:
                off = f"(bo{j} + _red_off(ks, K1, t{j}_2, t{j}_3, K2))[:, None] + bi{j}[None, :]"
            else:
                off = f"b{j}[:, None] + _red_off(ks, K1, x{j}_s2, x{j}_s3, K2)[None, :]"
            out.append(f"{names[v.name]} = tl.load(x{j} + ({off}), mask=mask, other=0){_cast(v)}")
        return out


def operand_params(n_ops: int) -> list[str]:
    return [f"x{j}_s{d}" for j in range(n_ops) for d in range(6)]


def align_consts(n_ops: int) -> list[str]:
    return [f"A{j}: tl.constexpr" for j in range(n_ops)] + ["AK: tl.constexpr", "AI: tl.constexpr"]


def tile_values(spec: RedSpec, lay: Layout) -> tuple[list[str], list[str]]:
    """Loads of the operands and the prologue; returns (statements, reducer value variables)."""
    env = {v.name: f"v{j}" for j, v in enumerate(spec.operands)}
    lines = lay.loads(spec.operands, env, spec.row_ops)
    lines += chain_statements(spec.prologue, env, prefix="p")
    return lines, [env[n] for n in spec.vals]


def point_values(spec: RedSpec, kexpr: str, mask: str) -> tuple[list[str], list[str]]:
    """Per-row loads at reduced index `kexpr` (a row vector) and the prologue on them: a gather
    of one element per row (e.g. the target logit). Returns (statements, value variables)."""
    env = {v.name: f"g{j}" for j, v in enumerate(spec.operands)}
    lines = [f"g{j} = tl.load(x{j} + b{j} + _red_off({kexpr}, K1, x{j}_s2, x{j}_s3, K2), mask={mask}, "
             f"other=0){_cast(v)}" for j, v in enumerate(spec.operands) if j not in spec.row_ops]
    lines += chain_statements(spec.prologue, env, prefix="gp")
    return lines, [env[n] for n in spec.vals]


def _lane_init(red: Reducer, shape: str) -> list[str]:
    lines = []
    for j, init in enumerate(red.inits):
        if j in red.index_states:
            lines += ["if I64:", f"    big = tl.full({shape}, 4611686018427387904, tl.int64)", "else:",
                      f"    big = tl.full({shape}, 2147483647, tl.int32)", f"s{j} = big"]
        else:
            lines.append(f"s{j} = tl.full({shape}, {init}, tl.float32)")
    return lines


def _finish(spec: RedSpec, chain: ChainCode | None, st: list[str]) -> list[str]:
    """Finalize a row state into res{r}, apply the epilogue, store (or write scalar partials)."""
    fin, exprs = spec.reducer.finalize(st)
    lines = list(spec.extra_fin) + fin + [f"res{r} = {e}" for r, e in enumerate(exprs)]
    if spec.scalar:
        return lines + ["tl.store(tp0 + pid, tl.sum(tl.where(rmask, res0, 0.0), axis=0))",
                        f"tl.store(tp1 + pid, tl.sum(tl.where(rmask, {spec.count}, 0.0), axis=0))"]
    if chain is not None:
        body, var = chain.kernel_body("res0", "rows", "rmask")
        lines += body + [f"res0 = {var}"]
    return lines + [f"tl.store(out{r} + rows, res{r}, mask=rmask)" for r in range(len(exprs))]


def _autotune(configs: list[tuple[int, int]], key: list[str]) -> str:
    return autotune([({}, w, s) for w, s in configs], key)


def main_kernel(spec: RedSpec, name: str, col: bool, chain: ChainCode | None, warps: list) -> str:
    red, lay = spec.reducer, Layout(col)
    n_ops, n_st, n_res = len(spec.operands), len(red.inits), len(red.results)
    plain = ([f"out{r}" for r in range(n_res)] + [f"ws{j}" for j in range(n_st)] + ["tp0", "tp1"]
             + [f"x{j}" for j in range(n_ops)] + ["M", "K", "I", "O1", "K1", "I1", "CH", "DIV"]
             + operand_params(n_ops) + (chain.kernel_params() if chain else []))
    const = [f"{c}: tl.constexpr" for c in ("O2", "K2", "I2", "I64", "SPLIT", "BLOCK_R", "BLOCK_K")]
    const += align_consts(n_ops)
    st = [f"s{j}" for j in range(n_st)]
    loads, vals = tile_values(spec, lay)
    g = Gen(vals=vals, mask="mask", kidx=lay.k("ks"), shape=lay.shape)
    step = lay.k_step("k0")
    if red.welford:
        step.append("it1 = ((k0 - k_lo) // BLOCK_K + 1).to(tl.float32)")
    body = lay.index(n_ops) + _lane_init(red, lay.shape) + [
        # Chunks are multiples of BLOCK_K: written so, the compiler knows k_lo's alignment.
        "k_lo = sid * ((CH // BLOCK_K) * BLOCK_K)", "k_hi = tl.minimum(k_lo + CH, K)",
        "for k0 in range(k_lo, k_hi, BLOCK_K):"]
    body += _ind(step + loads + red.update(g, st))
    rst = [f"r{j}" for j in range(n_st)]
    body += red.cross_lanes(st, rst, lay.axis)
    body += ["if SPLIT:"] + _ind([f"tl.store(ws{j} + sid * M + rows, r{j}, mask=rmask)" for j in range(n_st)])
    body += ["else:"] + _ind(_finish(spec, chain, rst))
    return (_autotune(warps, ["M", "K", "I"]) + f"def {name}({', '.join(plain + const)}):\n"
            + "\n".join(_ind(body)))


def combine_kernel(spec: RedSpec, name: str, chain: ChainCode | None) -> str:
    red = spec.reducer
    n_st, n_res = len(red.inits), len(red.results)
    plain = ([f"out{r}" for r in range(n_res)] + [f"ws{j}" for j in range(n_st)] + ["M", "NSPLIT", "K", "DIV"]
             + (chain.kernel_params() if chain else []))
    st, tt = [f"r{j}" for j in range(n_st)], [f"t{j}" for j in range(n_st)]
    body = ["pid = tl.program_id(0)", "rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)", "rmask = rows < M"]
    body += [f"r{j} = tl.load(ws{j} + rows, mask=rmask, other=0)" for j in range(n_st)]
    body += ["for sp in range(1, NSPLIT):"] + _ind(
        [f"t{j} = tl.load(ws{j} + sp * M + rows, mask=rmask, other=0)" for j in range(n_st)]
        + red.merge(st, tt))
    body += _finish(spec, chain, st)
    sig = ", ".join(plain + ["BLOCK_R: tl.constexpr"])
    return f"@triton.jit\ndef {name}({sig}):\n" + "\n".join(_ind(body))


def tail_kernel(name: str, chain: ChainCode | None) -> str:
    plain = ["out0", "tp0", "tp1", "P"] + (chain.kernel_params() if chain else [])
    body = ["offs = tl.arange(0, BLOCK)", "acc = tl.zeros([BLOCK], tl.float32)",
            "cnt = tl.zeros([BLOCK], tl.float32)",
            "for p0 in range(0, P, BLOCK):",
            "    pm = p0 + offs < P",
            "    acc += tl.load(tp0 + p0 + offs, mask=pm, other=0.0)",
            "    cnt += tl.load(tp1 + p0 + offs, mask=pm, other=0.0)",
            "tot = tl.sum(acc, axis=0)", "if MEAN:", "    tot = tot / tl.sum(cnt, axis=0)",
            "res0 = tl.zeros([BLOCK], tl.float32) + tot", "rmask = offs < 1"]
    if chain is not None:
        lines, var = chain.kernel_body("res0", "offs", "rmask")
        body += lines + [f"res0 = {var}"]
    body.append("tl.store(out0 + offs, res0, mask=rmask)")
    return (f"@triton.jit\ndef {name}({', '.join(plain + ['MEAN: tl.constexpr', 'BLOCK: tl.constexpr'])}):\n"
            + "\n".join(_ind(body)))


def _params(ctx: EmitContext, defaults: dict = DEFAULTS) -> dict:
    p = {k: ctx.params.get(k, v) for k, v in defaults.items()}
    if p.get("chunk"):
        # Loop steps no longer than the forced chunk, so that every chunk is a program.
        p["kmax"] = min(p["kmax"], 1 << (max(int(p["chunk"]), 1).bit_length() - 1))
    return p


def emit_reduction(spec: RedSpec, ctx: EmitContext, stem: str = "red") -> Emitted:
    ctx.share("collapse", COLLAPSE)
    ctx.share("reductions", REDUCTIONS_RUNTIME)
    p = _params(ctx)
    red = spec.reducer
    chain = ChainCode(spec.epilogue, spec.anchor_out, prefix="e") if spec.epilogue else None
    krow, kcol = ctx.name(f"{stem}_row_kernel"), ctx.name(f"{stem}_col_kernel")
    kcomb, ktail, lname = ctx.name(f"{stem}_combine_kernel"), ctx.name(f"{stem}_tail_kernel"), ctx.name(stem)
    kernels = [main_kernel(spec, krow, False, chain, p["warps"]),
               main_kernel(spec, kcol, True, chain, p["warps"])]
    if red.splittable:
        kernels.append(combine_kernel(spec, kcomb, chain))
    if spec.scalar:
        kernels.append(tail_kernel(ktail, chain))
    args = [f"a{j}" for j in range(len(spec.operands))]
    eargs = [f"c{i}" for i in range(len(chain.ext))] if chain else []
    names = [krow, kcol] + ([kcomb] if red.splittable else []) + ([ktail] if spec.scalar else [])
    flags = {"splittable": red.splittable, "index": red.index_states, "scalar": spec.scalar, "div": spec.div,
             "unsqueeze": spec.unsqueeze, "chain": chain is not None, "pair": spec.tuple_type}
    plans = ctx.name("plans")
    # The launch plan is a function of the operands' shapes and strides only, computed once per
    # signature (runtime reductions._red_plan): a call then costs a dict lookup, the allocations
    # and the launches (the timing protocol counts host time).
    ops, dts = f"[{', '.join(args)}], [{', '.join(eargs)}]", tuple_literal(spec.out_dtypes)
    launcher = [f"{plans} = {{}}", "", "",
                f"def {lname}({', '.join(args + eargs)}):",
                f"    return _red_run({plans}, ({', '.join(names)}),",
                f"                    {ops}, {dts}, {spec.dims!r}, {spec.keepdim}, {len(red.inits)},",
                f"                    {planner_params(p)!r}{keywords(flags)})"]
    return Emitted(kernels=kernels, helpers=["\n".join(launcher)])


def planner_params(p: dict) -> dict:
    """The planner's parameters (runtime _red_blocks / _red_split) among a template's."""
    return {k: p[k] for k in ("tile", "kmax", "imax", "split", "chunk", "waves")}


def keywords(flags: dict) -> str:
    """`, k=v` for each flag that is set (a runtime call's keyword arguments, defaults left out)."""
    return "".join(f", {k}={v!r}" for k, v in flags.items() if v is not None and v is not False and v != ())
