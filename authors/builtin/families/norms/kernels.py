"""The normalization kernels (fused-layer-rms-norm, two-level-norm-statistics) and their one
renderer; the launcher helpers they share are runtime/norms.py.

Every norm here is "statistics over a group of elements, then an elementwise apply":
- ROW: one program holds ROWS whole rows in registers (layer / RMS / L2 norm over trailing dims,
  group / instance norm with small groups): one read and one write of x.
- COL: the reduced dim is strided (F.normalize over a middle dim, a layer norm of a transposed
  view): tiles of [reduced, contiguous positions], in registers when they fit, else two loops.
- STATS -> _nrm_finalize -> APPLY (two-level): per-(group, chunk) Welford partials over many
  programs so every SM streams, a tiny combine (also updating BatchNorm running statistics), and
  one elementwise pass. Used for batch norm, large groups, and few long rows. A batch, group or
  instance norm whose input arrives channels-last (a convolution's output kept NHWC for it) reads
  it in place: the statistics through strides, the apply by APPLY_CL, which writes the NCHW
  result (or keeps channels-last where only convolutions read it). A batch norm of an NCHW input
  that only convolutions read uses APPLY_CL too, reading NCHW (IN_CL off), writing channels-last.

Each kernel below is real Triton and is, verbatim, what a norm without fused chains launches.
`render` derives a region's variant from it: its fused prologue replaces the direct load
`v = tl.load(x + xoff, mask=mask, other=0.0)` (it reads the input at the output's linear index
`lin`), its fused epilogue replaces `res = out`, the chains' parameters join the signature, and
assignments nothing reads any more (x's offsets under a prologue, `lin` without one) are dropped.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass

import triton
import triton.language as tl

from ...runtime.norms import _nrm_affine, _nrm_merge, _nrm_shift_scale
from ...templates.launch import TUNE_CACHE

# Modes shared by kernels and launchers: what the statistics are and how they scale x.
LAYER, RMS, L2, L1 = 0, 1, 2, 3


# Rationale for warps: the prune keeps 4-32 tile elements per thread (16384-wide rows get 16 warps,
# 128-wide rows pack 4-16 rows at 4 warps); num_stages 1: no loop to pipeline.
# The CPU interpreter runs only the first config: 16 rows per program there costs nothing and cuts
# the (per-program) interpreter overhead 16x; on a GPU the prune drops it for rows over 256.
ROW_CONFIGS = [({"ROWS": 16}, 8, 1), ({"ROWS": 1}, 4, 1), ({"ROWS": 1}, 8, 1), ({"ROWS": 1}, 16, 1),
               ({"ROWS": 2}, 4, 1), ({"ROWS": 4}, 4, 1), ({"ROWS": 8}, 4, 1), ({"ROWS": 16}, 4, 1)]
TILE_CONFIGS = [({}, 8, 1), ({}, 4, 1), ({}, 16, 1)]
LOOP_CONFIGS = TILE_CONFIGS + [({}, 8, 2)]  # kernels with a loop: try pipelining its loads


@triton.jit
def _nrm_row_kernel(x, y, w, b, n_rows, R, sx, eps, G, CPG, HW, MODE: tl.constexpr, AFF: tl.constexpr,
           HAS_W: tl.constexpr, HAS_B: tl.constexpr, I64: tl.constexpr, BLOCK: tl.constexpr,
           ROWS: tl.constexpr):
    """ROWS whole rows per program, held in registers: one read and one write of x; the variance
    is two-pass over registers (mean, then squared deviations), exact for offset data."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    if I64:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK)
    cmask = cols < R
    rmask = rows < n_rows
    mask = rmask[:, None] & cmask[None, :]
    lin = rows[:, None] * R + cols[None, :]
    xoff = rows[:, None] * sx + cols[None, :]
    v = tl.load(x + xoff, mask=mask, other=0.0)
    v = tl.where(mask, v.to(tl.float32), 0.0)
    if MODE == 0:
        mean = tl.sum(v, axis=1) / R
        d = tl.where(mask, v - mean[:, None], 0.0)
        out = d * (1.0 / tl.sqrt(tl.sum(d * d, axis=1) / R + eps))[:, None]
    elif MODE == 1:
        out = v * (1.0 / tl.sqrt(tl.sum(v * v, axis=1) / R + eps))[:, None]
    elif MODE == 2:
        out = v * (1.0 / tl.maximum(tl.sqrt(tl.sum(v * v, axis=1)), eps))[:, None]
    else:
        out = v * (1.0 / tl.maximum(tl.sum(tl.abs(v), axis=1), eps))[:, None]
    if AFF == 2:
        out = _nrm_affine(out, w, b, cols[None, :], cmask[None, :], HAS_W, HAS_B)
    elif AFF == 1:
        ch = (rows[:, None] % G) * CPG + cols[None, :] // HW
        out = _nrm_affine(out, w, b, ch, mask, HAS_W, HAS_B)
    res = out
    tl.store(y + lin, res, mask=mask)


@triton.jit
def _nrm_col_kernel(x, y, w, b, O, R, I, sxo, sxr, sxi, syo, syr, syi, eps, MODE: tl.constexpr,  # noqa: E741
           HAS_W: tl.constexpr, HAS_B: tl.constexpr, I64: tl.constexpr, ONE_PASS: tl.constexpr,
           BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    """Normalizes along a strided dim R at BLOCK_I positions of the contiguous dim I of one outer
    index: the tile [BLOCK_R, BLOCK_I] reads contiguous segments along I."""
    pid = tl.program_id(0)
    n_ib = tl.cdiv(I, BLOCK_I)
    o = pid // n_ib
    ii = (pid % n_ib) * BLOCK_I + tl.arange(0, BLOCK_I)
    if I64:
        o = o.to(tl.int64)
        ii = ii.to(tl.int64)
    imask = ii < I
    xb = o * sxo + ii[None, :] * sxi
    yb = o * syo + ii[None, :] * syi
    r0 = tl.arange(0, BLOCK_R)
    mean = tl.zeros([BLOCK_I], dtype=tl.float32)
    if ONE_PASS:
        rr = r0
        rmask = rr < R
        mask = rmask[:, None] & imask[None, :]
        lin = yb + rr[:, None] * syr
        xoff = xb + rr[:, None] * sxr
        v = tl.load(x + xoff, mask=mask, other=0.0)
        v = tl.where(mask, v.to(tl.float32), 0.0)
        if MODE == 0:
            mean = tl.sum(v, axis=0) / R
            d = tl.where(mask, v - mean[None, :], 0.0)
            scale = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / R + eps)
        elif MODE == 1:
            scale = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / R + eps)
        elif MODE == 2:
            scale = 1.0 / tl.maximum(tl.sqrt(tl.sum(v * v, axis=0)), eps)
        else:
            scale = 1.0 / tl.maximum(tl.sum(tl.abs(v), axis=0), eps)
        out = (v - mean[None, :]) * scale[None, :]
        out = _nrm_affine(out, w, b, rr[:, None], rmask[:, None], HAS_W, HAS_B)
        res = out
        tl.store(y + lin, res, mask=mask)
    else:
        cnt = tl.zeros([BLOCK_R, BLOCK_I], dtype=tl.float32)
        mu = tl.zeros([BLOCK_R, BLOCK_I], dtype=tl.float32)
        acc = tl.zeros([BLOCK_R, BLOCK_I], dtype=tl.float32)
        for r_start in range(0, R, BLOCK_R):
            rr = r_start + r0
            mask = (rr < R)[:, None] & imask[None, :]
            lin = yb + rr[:, None] * syr
            xoff = xb + rr[:, None] * sxr
            v = tl.load(x + xoff, mask=mask, other=0.0)
            v = tl.where(mask, v.to(tl.float32), 0.0)
            if MODE == 0:
                cnt += mask.to(tl.float32)
                delta = v - mu
                mu += tl.where(mask, delta / tl.maximum(cnt, 1.0), 0.0)
                acc += tl.where(mask, delta * (v - mu), 0.0)
            elif MODE == 3:
                acc += tl.abs(v)
            else:
                acc += v * v
        if MODE == 0:
            nn_, mean, m2 = _nrm_merge(cnt, mu, acc, 0)
            scale = 1.0 / tl.sqrt(m2 / R + eps)
        elif MODE == 1:
            scale = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / R + eps)
        elif MODE == 2:
            scale = 1.0 / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        else:
            scale = 1.0 / tl.maximum(tl.sum(acc, axis=0), eps)
        for r_start in range(0, R, BLOCK_R):
            rr = r_start + r0
            rmask = rr < R
            mask = rmask[:, None] & imask[None, :]
            lin = yb + rr[:, None] * syr
            xoff = xb + rr[:, None] * sxr
            v = tl.load(x + xoff, mask=mask, other=0.0)
            out = (v.to(tl.float32) - mean[None, :]) * scale[None, :]
            out = _nrm_affine(out, w, b, rr[:, None], rmask[:, None], HAS_W, HAS_B)
            res = out
            tl.store(y + lin, res, mask=mask)


@triton.jit
def _nrm_stats_kernel(x, part, xb, A, C, B, sa, sc, sb, GI, sgo, A_PER, B_PER, n_bc, n_chunks,
           ABS: tl.constexpr, HAS_XB: tl.constexpr, I64: tl.constexpr, BLOCK_A: tl.constexpr,
           BLOCK_C: tl.constexpr, BLOCK_B: tl.constexpr):
    """Level 1: per-lane Welford over one chunk (A_PER x B_PER) of BLOCK_C groups, merged into a
    (count, mean, M2) partial per group; grid (group blocks, chunks) keeps every SM streaming.
    Groups come GI to an image, images sgo apart (per-image groups of a channels-last x; GI = C
    otherwise): group img * GI + g starts at img * sgo + g * sc. A program's groups are of one
    image, so their offsets stay provably contiguous where sc is 1 (coalesced, vectorised loads).
    HAS_XB: x[a, g, b] + xb[g * sc + b * sb], the bias a group norm absorbed, per channel of a
    channels-last x."""
    pc = tl.program_id(0)
    pk = tl.program_id(1)
    a_lo = (pk // n_bc) * A_PER
    b_lo = (pk % n_bc) * B_PER
    a_hi = tl.minimum(a_lo + A_PER, A)
    b_hi = tl.minimum(b_lo + B_PER, B)
    blocks = tl.cdiv(GI, BLOCK_C)
    img = pc // blocks
    g = (pc % blocks) * BLOCK_C + tl.arange(0, BLOCK_C)
    if I64:
        img = img.to(tl.int64)
        g = g.to(tl.int64)
    cc = img * GI + g
    gm = g < GI
    cm = gm[None, :, None]
    ar = tl.arange(0, BLOCK_A)
    br = tl.arange(0, BLOCK_B)
    cnt = tl.zeros([BLOCK_A, BLOCK_C, BLOCK_B], dtype=tl.float32)
    mu = tl.zeros([BLOCK_A, BLOCK_C, BLOCK_B], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_A, BLOCK_C, BLOCK_B], dtype=tl.float32)
    c_in = g * sc
    c_x = (img * sgo + c_in)[None, :, None]
    for a_start in range(a_lo, a_hi, BLOCK_A):
        aa = a_start + ar
        if I64:
            aa = aa.to(tl.int64)
        ac_mask = (aa < a_hi)[:, None, None] & cm
        ac_x = aa[:, None, None] * sa + c_x
        ac_lin = (aa[:, None, None] * C + cc[None, :, None]) * B
        for b_start in range(b_lo, b_hi, BLOCK_B):
            bb = b_start + br
            if I64:
                bb = bb.to(tl.int64)
            mask = ac_mask & (bb < b_hi)[None, None, :]
            lin = ac_lin + bb[None, None, :]  # noqa: F841 (read by a fused prologue)
            xoff = ac_x + (bb * sb)[None, None, :]
            v = tl.load(x + xoff, mask=mask, other=0.0)
            v = tl.where(mask, v.to(tl.float32), 0.0)
            if HAS_XB:
                xbo = c_in[None, :, None] + (bb * sb)[None, None, :]
                v = tl.where(mask, v + tl.load(xb + xbo, mask=mask, other=0.0).to(tl.float32), 0.0)
            if ABS:
                v = tl.abs(v)
            # Welford per lane (inline: helper calls are costly under the CPU interpreter)
            cnt += mask.to(tl.float32)
            delta = v - mu
            mu += tl.where(mask, delta / tl.maximum(cnt, 1.0), 0.0)
            m2 += tl.where(mask, delta * (v - mu), 0.0)
    n1, mu1, m21 = _nrm_merge(cnt, mu, m2, 2)
    n2, mu2, m22 = _nrm_merge(n1, mu1, m21, 0)
    po = pk * C + cc
    tl.store(part + po, n2, mask=gm)
    tl.store(part + n_chunks * C + po, mu2, mask=gm)
    tl.store(part + 2 * n_chunks * C + po, m22, mask=gm)


@triton.jit
def _nrm_apply_kernel(x, y, stats, w, b, rm, rv, n_rows, L, sxr, n_stats, C, CPG, eps, SIDX: tl.constexpr,
           AFF: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, FROM_RUNNING: tl.constexpr,
           I64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """Elementwise pass over rows of length L: y = (x - shift[s]) * scale[s] (* w + b), s the
    row's statistics group (row // CPG, or row % C for batch norm); per-row scalars, no division
    per element."""
    pid = tl.program_id(0)
    n_lb = tl.cdiv(L, BLOCK_L)
    rows = (pid // n_lb) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = (pid % n_lb) * BLOCK_L + tl.arange(0, BLOCK_L)
    if I64:
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    rmask = rows < n_rows
    cmask = cols < L
    mask = rmask[:, None] & cmask[None, :]
    lin = rows[:, None] * L + cols[None, :]
    xoff = rows[:, None] * sxr + cols[None, :]
    v = tl.load(x + xoff, mask=mask, other=0.0)
    v = v.to(tl.float32)
    if SIDX == 0:  # noqa: SIM108 (unchanged text keeps Triton's cache key)
        s = rows // CPG
    else:
        s = rows % C
    shift, scale = _nrm_shift_scale(stats, rm, rv, s, rmask, n_stats, eps, FROM_RUNNING)
    out = (v - shift[:, None]) * scale[:, None]
    if AFF == 1:
        ch = rows % C
        out = _nrm_affine(out, w, b, ch[:, None], rmask[:, None], HAS_W, HAS_B)
    elif AFF == 2:
        out = _nrm_affine(out, w, b, cols[None, :], cmask[None, :], HAS_W, HAS_B)
    res = out
    tl.store(y + lin, res, mask=mask)


@triton.jit
def _nrm_apply_cl_kernel(x, y, stats, w, b, rm, rv, xb, n_rows, L, sxr, n_stats, C, CPG, eps,
           SIDX: tl.constexpr, AFF: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
           FROM_RUNNING: tl.constexpr, OUT_CL: tl.constexpr, HAS_XB: tl.constexpr, I64: tl.constexpr,
           IN_CL: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    """The apply (_nrm_apply_kernel's arguments) on a channels-last x, writing y in NCHW: a tile
    is BLOCK_R channels x BLOCK_L pixels of one image, read along the channels (x's contiguous
    run) and stored along the pixels (y's), so the transposition rides on the pass (the conv
    before it need not convert its output back). Statistics per channel (SIDX 1: batch norm) or
    per (image, channel group) (0: group / instance norm). With OUT_CL, y is channels-last too
    (every reader is a convolution that would convert it): stored where x was read. HAS_XB: x
    plus xb per channel (a group norm's absorbed convolution bias). Without IN_CL, x is NCHW and
    y channels-last (OUT_CL): a batch norm of an NCHW input (a concatenation) that only a
    convolution reads, transposed on the way instead of by the convolution."""
    pid = tl.program_id(0)
    n_lb = tl.cdiv(L, BLOCK_L)
    n_cb = tl.cdiv(C, BLOCK_R)
    img = pid // (n_cb * n_lb)
    t = pid % (n_cb * n_lb)
    ch = (t // n_lb) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = (t % n_lb) * BLOCK_L + tl.arange(0, BLOCK_L)
    if I64:
        img = img.to(tl.int64)
        ch = ch.to(tl.int64)
        cols = cols.to(tl.int64)
    rmask = ch < C
    mask = rmask[:, None] & (cols < L)[None, :]
    lin = (img * C + ch)[:, None] * L + cols[None, :]
    nhwc = img * L * C + cols[None, :] * C + ch[:, None]  # x's offsets, and y's under OUT_CL
    xoff = nhwc if IN_CL else lin
    v = tl.load(x + xoff, mask=mask, other=0.0)
    v = v.to(tl.float32)
    if HAS_XB:
        v += tl.load(xb + ch, mask=rmask, other=0.0).to(tl.float32)[:, None]
    if SIDX == 0:  # noqa: SIM108 (constexpr branches, as in _nrm_apply_kernel)
        s = (img * C + ch) // CPG
    else:
        s = ch
    shift, scale = _nrm_shift_scale(stats, rm, rv, s, rmask, n_stats, eps, FROM_RUNNING)
    out = (v - shift[:, None]) * scale[:, None]
    out = _nrm_affine(out, w, b, ch[:, None], rmask[:, None], HAS_W, HAS_B)
    res = out
    if OUT_CL:
        tl.store(y + nhwc, res, mask=mask)
    else:
        tl.store(y + lin, res, mask=mask)


@dataclass(frozen=True)
class NormKernel:
    """A kernel as the generator uses it: the real function, its autotuning configurations and
    key, and whether a fused epilogue applies in it (the statistics kernel writes no output)."""

    fn: triton.JITFunction
    configs: list
    key: list[str]
    epilogue: bool


_APPLY_KEY = ["n_rows", "L", "BLOCK_R", "BLOCK_L"]
KERNELS = {"row": NormKernel(_nrm_row_kernel, ROW_CONFIGS, ["R", "n_rows", "BLOCK"], True),
           "col": NormKernel(_nrm_col_kernel, LOOP_CONFIGS, ["O", "R", "I", "BLOCK_R", "BLOCK_I"], True),
           "stats": NormKernel(_nrm_stats_kernel, LOOP_CONFIGS, ["A", "C", "B", "A_PER", "B_PER"], False),
           "apply": NormKernel(_nrm_apply_kernel, TILE_CONFIGS, _APPLY_KEY, True),
           "apply_cl": NormKernel(_nrm_apply_cl_kernel, TILE_CONFIGS, _APPLY_KEY, True)}

DIRECT_LOAD = "v = tl.load(x + xoff, mask=mask, other=0.0)"
NO_EPILOGUE = "res = out"
_NOQA = re.compile(r"  # noqa: .*$")


def render(kernel: NormKernel, name: str, load: list[str] | None = None, epilogue: list[str] | None = None,
           plain: tuple[str, ...] = (), const: tuple[str, ...] = ()) -> str:
    """`kernel` as generated source named `name`, under its autotuning decorator: `load` (lines
    defining `v`) replaces the direct load, `epilogue` (lines defining `res` from `out`) replaces
    `res = out`, `plain` parameters go before the first constexpr one and `const` ones last. With
    no chains it is the real function's text under a new name."""
    lines = inspect.getsource(kernel.fn.fn).split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    lines = [_NOQA.sub("", ln) for ln in lines[start:]]
    tree = ast.parse("\n".join(lines)).body[0]
    swaps = {DIRECT_LOAD: load, NO_EPILOGUE: epilogue}
    for stmt in sorted(_statements(tree), key=lambda s: -s.lineno):
        new = swaps.get(ast.unparse(stmt))
        if new is not None:
            indent = lines[stmt.lineno - 1][: stmt.col_offset]
            lines[stmt.lineno - 1: stmt.end_lineno] = [indent + ln for ln in new]
    args = tree.args.args
    first = next(a for a in args if a.annotation is not None)
    last = args[-1]
    row = lines[last.end_lineno - 1]
    lines[last.end_lineno - 1] = row[: last.end_col_offset] + "".join(", " + p for p in const) + \
        row[last.end_col_offset:]
    row = lines[first.lineno - 1]
    lines[first.lineno - 1] = (row[: first.col_offset] + "".join(p + ", " for p in plain)
                               + row[first.col_offset:])
    lines[0] = lines[0].replace(f"def {kernel.fn.fn.__name__}(", f"def {name}(", 1)
    decorator = (f"@triton.autotune(configs=_configs({kernel.configs!r}), key={kernel.key!r},\n"
                 f"                 prune_configs_by={{'early_config_prune': _nrm_prune}}, {TUNE_CACHE})\n"
                 "@triton.jit\n")
    return decorator + "\n".join(_drop_dead(lines)).rstrip("\n")


def _statements(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not isinstance(n, ast.FunctionDef)]


def _drop_dead(lines: list[str]) -> list[str]:
    """`lines` (one function) without the single-name assignments whose name nothing reads,
    repeated until none is left: offsets only the replaced load used, a `lin` no chain reads."""
    while True:
        tree = ast.parse("\n".join(lines)).body[0]
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        dead = [s for s in _statements(tree) if isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id not in read]
        if not dead:
            return lines
        for s in sorted(dead, key=lambda s: -s.lineno):
            del lines[s.lineno - 1: s.end_lineno]
