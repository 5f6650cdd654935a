"""Generated-code pieces of the GEMM family (skills/gemm-*, gemv-bandwidth-kernel,
batched-small-gemm, triangular-matmul-skip-tiles, symmetric-structure-half-work).

One kernel text serves every variant: C[b] = A[b] @ B[b] over up to two (collapsed) batch dims
with arbitrary operand strides, a grouped tile order, an fp32 accumulator, and the region's
pointwise epilogue (`GemmChain`) applied to the tile before its only store. Python switches
add what a variant needs: a K range per tile (split-K chunks, triangular operands, skipped
zero tiles), a triangular output mask, a mirrored store (symmetric outputs), or a CUDA-core
FMA inner loop instead of `tl.dot` (matrix-vector shapes, where tensor-core tiles are padding),
run on C^T = B^T A^T when the small dimension is M, or three dots per K step on operands
prepared as hi / lo parts (runtime/gemm_prep.py: fp16 when both are prepared, TF32 when one side is split
in registers) instead of the in-kernel tf32x3 dot.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...frontend.ir import Op, Value
from ...templates.launch import autotune
from ..pointwise.codegen import chain_statements, external_inputs, runtime_scalars


@dataclass
class KernelOpts:
    precision: str = "tf32x3"
    """input_precision of tl.dot: "tf32x3" or "ieee" (strict fp32), "tf32" (TF32 policy only)."""
    inner: str = "dot"
    """"dot": tensor-core tiles; "fma": CUDA-core multiply-adds reduced over each K step (tiny N)."""
    has_bias: bool = False
    split: bool = False
    """Write fp32 partial sums of one K chunk per program (split-K); no bias, no epilogue."""
    a_tri: tuple[str, int] | None = None
    """(tril|triu, diagonal): A is triangular, so each row tile of C needs only part of K."""
    b_tri: tuple[str, int] | None = None
    out_tri: tuple[str, int] | None = None
    """(tril|triu, diagonal): the output is masked to a triangle; tiles outside it are skipped."""
    mirror: bool = False
    """Symmetric output (M == N): only tiles with pid_m >= pid_n run, each stored twice."""
    swap: bool = False
    """The kernel computes C^T = B^T A^T (launched with the operands exchanged): the output and
    the bias are indexed transposed. Lets one small-N kernel serve small M too."""
    prep: bool = False
    """Operands arrive split into hi / lo parts (runtime/gemm_prep.py; extra `al_ptr`, `bl_ptr`), TF32 unless
    `f16`: three plain dots per K step replace the in-kernel tf32x3 dot."""
    split_a: bool = False
    """With `prep`: only B arrives prepared; A is read as it is and split into hi / lo in registers
    (wgmma takes A from registers, so A needs no K-major copy; `al_ptr` is unused). With `swap`
    too, the launcher passes B^T as A and the prepared A^T as B: the small-M mirror."""
    f16: bool = False
    """With `prep` (both sides): the parts are fp16 hi / lo of operands scaled by powers of two
    (runtime/gemm_prep.py; fp16 tensor cores run at twice TF32's rate), with the constexpr ROW_SCALES
    chosen by the launcher: per row of A / column of B and K chunk (False: `sa_ptr` / `sb_ptr` hold
    the inverse scales, BLOCK_K = the chunk, applied to every K step's products), or per row /
    column over all of K (True: they hold the bounds max |x| the preparation used, [batches, M] and
    [batches, N]; constant along each output's K, so undone once after the loop)."""


class GemmChain:
    """A pointwise epilogue on a GEMM tile whose external operands are addressed by output row and
    column: address = (base + row_off[r])[:, None] + col_off[c][None, :], with the row part on a
    [BLOCK_M] vector (integer divisions only for operands broadcast over part of the rows) and a
    bias-like operand (no row dims) loaded as one [BLOCK_N] vector. `ChainCode`'s flat-index
    `_bcast_off` costs two integer divisions per tile element. Register budget (ptxas, sm_90,
    128x128 tf32x3 tile at 255 registers): bias-like operands add no spill, one full-tile operand
    ~56 bytes, two ~250 bytes, all after the K loop."""

    def __init__(self, ops: list[Op], anchor: Value, prefix: str = "e"):
        self.ops, self.anchor, self.p = ops, anchor, prefix
        self.ext = external_inputs(ops, produced={anchor.name})
        self.scalars = runtime_scalars(ops)
        """Run-time Python numbers the chain reads (`/ math.sqrt(d)`): plain kernel arguments."""

    @property
    def empty(self) -> bool:
        return not self.ops

    def kernel_params(self) -> list[str]:
        p, n = self.p, len(self.ext)
        plain = [f"{p}_{f}{i}" for i in range(n) for f in ("in", "R1_", "R2_", "r0_", "r1_", "r2_", "c")]
        plain += [f"{p}_k{j}" for j in range(len(self.scalars))]
        return plain + [f"{p}_RR{i}: tl.constexpr" for i in range(n)]

    def kernel_body(self, acc: str, rows: str, cols: str, mask: str, layout: str,
                    col_mask: str) -> tuple[list[str], str]:
        """Statements applying the chain to `acc`. `rows` / `cols` are vectors of output rows and
        columns; `layout` "rc": the tile is [rows, cols], "cr": [cols, rows], "flat": 1-D
        (rows and cols are per element). `mask` masks the tile, `col_mask` the columns."""
        p, lines = self.p, []
        env = {self.anchor.name: acc, **{v.name: f"{p}_k{j}" for j, v in enumerate(self.scalars)}}
        index = {v.name: i for i, v in enumerate(self.ext)}
        for op in self.ops:
            # Each operand is loaded right before its first use: fewer tiles live at once.
            for v in op.inputs:
                if v.name in index and v.name not in env:
                    lines += self._load(index[v.name], v, rows, cols, mask, layout, col_mask)
                    env[v.name] = f"{p}_x{index[v.name]}"
            lines += chain_statements([op], env, prefix=f"{p}t")
        return lines, env[self.ops[-1].out.name] if self.ops else acc

    def _load(self, i: int, v: Value, rows: str, cols: str, mask: str, layout: str,
              col_mask: str) -> list[str]:
        r, q = f"({rows})", f"{self.p}_{{}}{i}".format
        cast = ".to(tl.float32)" if str(v.meta.dtype) in ("torch.float16", "torch.bfloat16") else ""
        m = f", mask={mask}, other=0"
        # No row dims: one vector per tile, broadcast (a bias-like operand).
        vec = {"rc": "[None, :]", "cr": "[:, None]", "flat": ""}[layout]
        lines = [f"if {q('RR')} == 0:",
                 f"    {q('x')} = tl.load({q('in')} + ({cols}) * {q('c')}, mask={col_mask}, "
                 f"other=0){vec}{cast}",
                 "else:"]
        # Row dims (R0, R1, R2)[-RR:]; the outermost wraps too (outer broadcast dims were dropped).
        ro = {1: f"({r} % {q('R2_')}) * {q('r2_')}",
              2: f"(({r} // {q('R2_')}) % {q('R1_')}) * {q('r1_')} + ({r} % {q('R2_')}) * {q('r2_')}",
              3: f"({r} // ({q('R1_')} * {q('R2_')})) * {q('r0_')} + (({r} // {q('R2_')}) % {q('R1_')}) * "
                 f"{q('r1_')} + ({r} % {q('R2_')}) * {q('r2_')}"}
        lines += [f"    if {q('RR')} == 1:", f"        {q('ro')} = {ro[1]}",
                  f"    elif {q('RR')} == 2:", f"        {q('ro')} = {ro[2]}",
                  "    else:", f"        {q('ro')} = {ro[3]}"]
        ptr = {"rc": f"({q('in')} + {q('ro')})[:, None] + (({cols}) * {q('c')})[None, :]",
               "cr": f"({q('in')} + {q('ro')})[None, :] + (({cols}) * {q('c')})[:, None]",
               "flat": f"{q('in')} + {q('ro')} + ({cols}) * {q('c')}"}[layout]
        return [*lines, f"    {q('x')} = tl.load({ptr}{m}){cast}"]


def kernel_source(name: str, opts: KernelOpts, chain: GemmChain | None,
                  configs: list[tuple[dict, int, int]]) -> str:
    """A GEMM kernel: grid = (splits * batches * tiles,), tiles in grouped order per batch."""
    chain = chain if chain is not None and not chain.empty and not opts.split else None
    params = ["a_ptr", "b_ptr", *(["al_ptr", "bl_ptr"] if opts.prep else []),
              *(["sa_ptr", "sb_ptr"] if opts.f16 else []),
              "c_ptr", "bias_ptr", "M", "N", "K", "NB", "B1", "s_a0", "s_a1", "s_am",
              "s_ak", "s_b0", "s_b1", "s_bk", "s_bn", "s_bias", "K_CHUNK"]
    if chain is not None:
        params += chain.kernel_params()
    params += ["I64: tl.constexpr", *(["ROW_SCALES: tl.constexpr"] if opts.f16 else []),
               "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr",
               "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
    b = ["pid = tl.program_id(0)",
         "num_pid_m = tl.cdiv(M, BLOCK_M)",
         "num_pid_n = tl.cdiv(N, BLOCK_N)",
         "tiles = num_pid_m * num_pid_n"]
    if opts.split:
        b += ["sid = pid // (tiles * NB)", "pid = pid % (tiles * NB)",
              "if I64:", "    sid = sid.to(tl.int64)"]
    b += ["bid = pid // tiles",
          "tile = pid % tiles",
          "# Grouped order: programs resident together share GROUP_M row panels of A and the",
          "# column panels of B in L2 (gemm-grouped-tile-order).",
          "width = GROUP_M * num_pid_n",
          "first_m = (tile // width) * GROUP_M",
          "gsize = tl.minimum(num_pid_m - first_m, GROUP_M)",
          "pid_m = first_m + (tile % width) % gsize",
          "pid_n = (tile % width) // gsize",
          "if I64:",
          "    bid = bid.to(tl.int64)",
          "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
          "rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
          "if I64:",
          "    rm = rm.to(tl.int64)",
          "    rn = rn.to(tl.int64)",
          "rk = tl.arange(0, BLOCK_K)",
          "# Edge tiles wrap their rows / columns (loads stay in bounds without M/N masks; the",
          "# store is masked).",
          "ram = rm % M",
          "rbn = rn % N",
          "a_boff = (bid // B1) * s_a0 + (bid % B1) * s_a1",
          "b_boff = (bid // B1) * s_b0 + (bid % B1) * s_b1"]
    b += _k_range(opts)
    b.append("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    b += ["rka = k_lo + rk",
          "a_off = a_boff + ram[:, None] * s_am + rka[None, :] * s_ak",
          "b_off = b_boff + rka[:, None] * s_bk + rbn[None, :] * s_bn",
          "a_ptrs = a_ptr + a_off",
          "b_ptrs = b_ptr + b_off"]
    if opts.prep:
        b += [*([] if opts.split_a else ["al_ptrs = al_ptr + a_off"]),
              "bl_ptrs = bl_ptr + b_off"]
    b += ["for k in range(k_lo, k_hi, BLOCK_K):",
          "    kmask = rk < k_hi - k",
          "    a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)",
          "    b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)"]
    if opts.prep and opts.split_a:
        b += ["    hi = _gemm_round_tf32(a)  # A's hi / lo split, in registers",
              "    al = _gemm_round_tf32(a - hi)",
              "    a = hi"]
    elif opts.prep:
        b.append("    al = tl.load(al_ptrs, mask=kmask[None, :], other=0.0)")
    if opts.prep:
        # fp16 parts: tl.dot's input_precision concerns fp32 inputs only.
        prec = "" if opts.f16 else ', input_precision="tf32"'
        b += ["    bl = tl.load(bl_ptrs, mask=kmask[:, None], other=0.0)",
              "    # Error-compensated fp32 (runtime/gemm_prep.py): small products first, into a fresh",
              "    # accumulator added in fp32 (the tensor core's accumulation truncates).",
              f"    part = tl.dot(a, bl{prec})",
              f"    part = tl.dot(al, b, acc=part{prec})",
              f"    part = tl.dot(a, b, acc=part{prec})",
              *(["    if not ROW_SCALES:",
                 "        # Undo this K chunk's row scales of A and column scales of B (powers of two);",
                 "        # rows are K-contiguous with a length divisible by the chunk (= BLOCK_K).",
                 "        fa = tl.load(sa_ptr + (a_boff + ram * s_am + k) // BLOCK_K)",
                 "        fb = tl.load(sb_ptr + (b_boff + rbn * s_bn + k) // BLOCK_K)",
                 "        part = part * (fa[:, None] * fb[None, :])"] if opts.f16 else []),
              "    acc += part",
              *([] if opts.split_a else ["    al_ptrs += BLOCK_K * s_ak"]),
              "    bl_ptrs += BLOCK_K * s_bk"]
    elif opts.inner == "dot":
        b.append(f'    acc = tl.dot(a, b, acc=acc, input_precision="{opts.precision}")')
    else:  # the [BM, BK, BN] products are transient: LLVM turns the reduction into FMA chains
        b.append("    acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)")
    b += ["    a_ptrs += BLOCK_K * s_ak",
          "    b_ptrs += BLOCK_K * s_bk"]
    if opts.f16:
        b += ["if ROW_SCALES:",
              "    # Undo the row scales of A and column scales of B (powers of two rebuilt from the",
              "    # bounds the preparation used; constant along K, so once per tile).",
              "    fa = _gemm_exp2(_gemm_pow2_exp(tl.load(sa_ptr + bid * M + ram)) - 14)",
              "    fb = _gemm_exp2(_gemm_pow2_exp(tl.load(sb_ptr + bid * N + rbn)) - 14)",
              "    acc = acc * (fa[:, None] * fb[None, :])"]
    if opts.has_bias and not opts.split:
        b.append("acc += tl.load(bias_ptr + ram * s_bias)[:, None]" if opts.swap else
                 "acc += tl.load(bias_ptr + rbn * s_bias)[None, :]")
    if opts.out_tri is not None:
        kind, diag = opts.out_tri
        cmp = "<=" if kind == "tril" else ">="
        b.append(f"acc = tl.where(rn[None, :] {cmp} rm[:, None] + {int(diag)}, acc, 0.0)")
    # Output addresses as row pointers plus column offsets: no [BM, BN] integer offset tensor
    # stays live next to the accumulator (tf32x3 tiles are register-bound).
    base = "c_ptr + sid * (NB * M * N)" if opts.split else "c_ptr"
    if opts.swap:
        b.append(f"c_ptrs = ({base} + (bid * N + rn) * M)[None, :] + rm[:, None]")
    else:
        b.append(f"c_ptrs = ({base} + (bid * M + rm) * N)[:, None] + rn[None, :]")
    b.append("mask = (rm[:, None] < M) & (rn[None, :] < N)")
    if opts.mirror:
        b.append("mask = mask & (pid_m >= pid_n)")
    res = "acc"
    if chain is not None:
        # Output rows are global (batch * M + m); with `swap` the tile is [n, m].
        if opts.swap:
            b.append("grow = bid * N + rn")
            lines, res = chain.kernel_body("acc", "grow", "rm", "mask", "cr", "rm < M")
        else:
            b.append("grow = bid * M + rm")
            lines, res = chain.kernel_body("acc", "grow", "rn", "mask", "rc", "rn < N")
        b += lines
    b.append(f"tl.store(c_ptrs, {res}, mask=mask)")
    if opts.mirror:
        b += ["# The mirrored tile C[n-block, m-block] = C[m-block, n-block]^T (M == N).",
              "acc_t = tl.trans(acc)",
              "c_ptrs_t = (c_ptr + (bid * M + rn) * N)[:, None] + rm[None, :]",
              "mask_t = (rn[:, None] < N) & (rm[None, :] < M) & (pid_m > pid_n)"]
        res_t = "acc_t"
        if chain is not None:
            b.append("grow_t = bid * M + rn")
            lines, res_t = chain.kernel_body("acc_t", "grow_t", "rm", "mask_t", "rc", "rm < M")
            b += lines
        b.append(f"tl.store(c_ptrs_t, {res_t}, mask=mask_t)")
    key = ["M", "N", "K", "K_CHUNK"] if opts.split else ["M", "N", "K"]
    return autotune(configs, key) + f"def {name}({', '.join(params)}):\n" + "\n".join("    " + ln for ln in b)


def _k_range(opts: KernelOpts) -> list[str]:
    """[k_lo, k_hi): the part of K this tile needs; empty for tiles known to be zero."""
    b = ["k_lo = sid * K_CHUNK" if opts.split else "k_lo = 0",
         "k_hi = tl.minimum(K, k_lo + K_CHUNK)" if opts.split else "k_hi = K"]
    # A tril(d): A[i, k] = 0 for k > i + d; A triu(d): 0 for k < i + d.
    # B tril(d): B[k, j] = 0 for j > k + d; B triu(d): 0 for j < k + d.
    if opts.a_tri is not None:
        kind, d = opts.a_tri
        b.append(f"k_hi = tl.minimum(k_hi, pid_m * BLOCK_M + BLOCK_M + {int(d)})" if kind == "tril"
                 else f"k_lo = tl.maximum(k_lo, pid_m * BLOCK_M + {int(d)})")
    if opts.b_tri is not None:
        kind, d = opts.b_tri
        b.append(f"k_lo = tl.maximum(k_lo, pid_n * BLOCK_N - {int(d)})" if kind == "tril"
                 else f"k_hi = tl.minimum(k_hi, pid_n * BLOCK_N + BLOCK_N - {int(d)})")
    dead = None
    if opts.out_tri is not None:
        kind, diag = opts.out_tri
        dead = (f"pid_n * BLOCK_N > pid_m * BLOCK_M + BLOCK_M - 1 + {int(diag)}" if kind == "tril"
                else f"pid_n * BLOCK_N + BLOCK_N - 1 < pid_m * BLOCK_M + {int(diag)}")
    if opts.mirror:
        dead = "pid_m < pid_n"
    if dead is not None:
        b += [f"if {dead}:", "    k_hi = tl.minimum(k_hi, k_lo)"]
    if opts.a_tri or opts.b_tri:
        b.append("k_lo = (k_lo // BLOCK_K) * BLOCK_K")
    return b


def reduce_source(name: str, has_bias: bool, chain: GemmChain | None) -> str:
    """Split-K second pass: sum the partial products in a fixed order (deterministic), add the
    bias, apply the epilogue, store. Memory-bound: S reads and one write per output element."""
    chain = chain if chain is not None and not chain.empty else None
    params = ["ws_ptr", "c_ptr", "bias_ptr", "total", "N", "S", "s_bias"]
    if chain is not None:
        params += chain.kernel_params()
    params += ["I64: tl.constexpr", "BLOCK: tl.constexpr"]
    b = ["pid = tl.program_id(0)",
         "if I64:",
         "    pid = pid.to(tl.int64)",
         "offs = pid * BLOCK + tl.arange(0, BLOCK)",
         "mask = offs < total",
         "acc = tl.zeros((BLOCK,), dtype=tl.float32)",
         "ptrs = ws_ptr + offs",
         "for s in range(0, S):",
         "    acc += tl.load(ptrs, mask=mask, other=0.0)",
         "    ptrs += total"]
    if has_bias:
        b.append("acc += tl.load(bias_ptr + (offs % N) * s_bias, mask=mask, other=0.0)")
    res = "acc"
    if chain is not None:
        lines, res = chain.kernel_body("acc", "offs // N", "offs % N", "mask", "flat", "mask")
        b += lines
    b.append(f"tl.store(c_ptr + offs, {res}, mask=mask)")
    # Rationale: a streaming pass; 1024-2048 elements per program, 4-8 warps (as the pointwise
    # template) keep enough 16-byte loads in flight.
    cfg = [(dict(BLOCK=1024), 4, 1), (dict(BLOCK=2048), 8, 1)]
    return autotune(cfg, ["total", "S"]) + f"def {name}({', '.join(params)}):\n" + "\n".join(
        "    " + ln for ln in b)
