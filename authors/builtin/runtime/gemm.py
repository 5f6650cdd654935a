"""The GEMM launchers' runtime, shared by every GEMM region of a generated file: batch-dim
collapse, epilogue operand geometry, the launch plan and its planner (`_gemm_planner`: path,
preparation, split-K, grids and arguments from metadata), and the launcher's one call,
`_gemm_run` (families/gemm/launch.py renders it).

Pasted into a solution with a GEMM (runtime.GEMM_RUNTIME), after runtime/common.py and
runtime/gemm_prep.py, whose helpers it calls.
"""

import torch

from .common import _bshape, _cdiv, _i64, _launch, _merge_dims, _meta_ops, _npow2, _sms
from .gemm_prep import _GEMM_PREP_MIN, _GEMM_SCALE_K, _gemm_prep_plan, _gemm_prep_run


def _gemm_batch(shape, sa, sb):
    """Batch dims of both operands as two (size, a stride, b stride) triples: size-1 dims dropped,
    adjacent dims merged where both operands allow it; None when more than two remain."""
    sizes, (xa, xb) = _merge_dims(shape, [sa, sb])
    if len(sizes) > 2:
        return None
    return [[1, 0, 0]] * (2 - len(sizes)) + [list(d) for d in zip(sizes, xa, xb, strict=True)]


def _gemm_plan(a, b, linear, fold=True):
    """Operands in GEMM form with torch.matmul semantics (F.linear: b is the [N, K] weight):
    (A [.., M, K], B [.., K, N], M, N, K, two batch triples, output shape, output shape with the
    M and N dims of rank-1 operands kept). `fold`: a batch of A times one matrix B may run as one
    GEMM with the batch folded into M."""
    if linear:
        out_shape = gshape = (*a.shape[:-1], b.shape[0])
        a, b = a.reshape(-1, a.shape[-1]), b.t()
    else:
        lead = _bshape(a.shape[:-2], b.shape[:-2]) if a.dim() > 1 and b.dim() > 1 else \
            (a.shape[:-2] if b.dim() == 1 else b.shape[:-2])
        out_shape = (*lead, *a.shape[-2:-1], *(b.shape[-1:] if b.dim() > 1 else ()))
        gshape = (*lead, a.shape[-2] if a.dim() > 1 else 1, b.shape[-1] if b.dim() > 1 else 1)
        a = a.unsqueeze(0) if a.dim() == 1 else a
        b = b.unsqueeze(-1) if b.dim() == 1 else b
        if fold and b.dim() == 2 and a.dim() > 2:
            # Rationale: a shared right operand folds the batch into M (one large GEMM, as PyTorch
            # does); reshape is a view for the usual layouts and one copy of A otherwise.
            a = a.reshape(-1, a.shape[-1])
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = _bshape(a.shape[:-2], b.shape[:-2])
    a, b = a.expand(*batch, M, K), b.expand(*batch, K, N)
    dims = _gemm_batch(batch, a.stride()[:-2], b.stride()[:-2])
    if dims is None:
        a, b = a.reshape(-1, M, K), b.reshape(-1, K, N)
        dims = _gemm_batch(a.shape[:-2], a.stride()[:-2], b.stride()[:-2])
    return a, b, M, N, K, dims[0], dims[1], out_shape, gshape


def _gemm_ext(t, out_shape, gshape):
    """An epilogue operand broadcast over the output, addressed by output (row, column): rows are
    the output's leading dims (of its GEMM view `gshape`) collapsed to <= 3, the column stride is
    the last dim's. Returns (tensor, [R1, R2, r0, r1, r2, c], number of row dims used)."""
    st = t.expand(out_shape).view(gshape).stride()
    sizes, (strides,) = _merge_dims(gshape[:-1], [st[:-1]])
    rows = [[n, s] for n, s in zip(sizes, strides, strict=True)]
    while rows and rows[0][1] == 0:
        del rows[0]  # outermost broadcast dims add nothing (the kernel wraps the next one)
    if len(rows) > 3:
        return _gemm_ext(t.expand(out_shape).contiguous(), out_shape, gshape)
    pad = [[1, 0]] * (3 - len(rows)) + rows
    return t, [pad[1][0], pad[2][0], pad[0][1], pad[1][1], pad[2][1], st[-1]], len(rows)


class _GemmPlan:
    """A GEMM launcher's launch plan for one operand signature, filled in by _gemm_planner from the
    operands' metadata only; a call allocates, prepares and launches from it (_gemm_run)."""

    def __init__(self, out_shape, ops, views):
        self.out_shape = out_shape
        # Sizes and strides of the GEMM views of a and b (_gemm_plan), None where the view is the
        # operand as it is: a call takes them with as_strided (these views keep the storage offset).
        self.views = [None if (v.shape, v.stride()) == (t.shape, t.stride()) else (v.shape, v.stride())
                      for t, v in zip(ops, views, strict=True)]
        self.total = 0  # the output's elements
        self.eg = []  # each epilogue operand's geometry (_gemm_ext)
        self.gemv = self.swap = False  # the CUDA-core kernel; on C^T = B^T A^T
        self.prep, self.row_scaled = 0, False  # operand preparation mode; fp16 scales per row
        self.twin = 0  # the three-dot twin launched (its prep mode), 0 for none (_gemm_prepared)
        self.k = self.rk = 0  # index of the GEMM kernel and of the reduction (_gemm_slots)
        self.prep_a = self.prep_b = None  # _gemm_prep_plan of each prepared operand
        self.split = 0  # K chunks (split-K), 0 for none
        self.grid = self.args = self.kw = None  # the GEMM kernel's grid, integer arguments, keywords
        self.rgrid = self.rargs = self.rkw = None  # the same for the split-K reduction
        self.pick, self.rpick = [], []  # their autotuning picks (_launch)


def _gemm_new_plan(plans, key, cfg, dtype):
    """Plan a GEMM launcher's missing key on meta operands (_gemm_planner) and cache it; as in
    _new_plan, a layout that copies an operand (a reshape that cannot be a view, an epilogue operand
    _gemm_ext materialises) caches the empty marker (), and the launcher then plans each call on
    its own operands. The meta operands start at storage
    offset 1, which views keep and copies do not (autograd's view tracking is off in inference
    mode, so it cannot tell)."""
    metas = [t.as_strided(t.shape, t.stride(), 1) for t in _meta_ops(key)]
    plan, laid = _gemm_planner(metas, key[3], cfg, dtype)
    plans[key] = plan = plan if all(t.storage_offset() == 1 for t in laid) else ()
    return plan


def _gemm_grid(n, M, N):
    """Grid of a tiled GEMM kernel: n (batches, or K chunks x batches) x the tiles of M x N. A
    function, so that a plan's grid keeps the sizes it was built with."""
    return lambda meta: (n * _cdiv(M, meta['BLOCK_M']) * _cdiv(N, meta['BLOCK_N']),)


# Rationale (H200, 2026-11-30, do_bench, tests/gpu/candidates_vs_eager.py,
# problems/measurements/h200-2026-11-30-rowscale/call1_gemm_scales_conv_tiles.txt): scales per row over all
# of K ran the fp16 GEMM 11-22% faster than per-(row, K chunk) scales, whose loads and multiply
# cost every K step (3840^3: 0.885 -> 0.725 ms; 3072 x 2560 x 4096: 0.570 -> 0.460), but their
# bounds cost one more read of both operands, 4 (M + N) K bytes against 2 M N K flops: on a
# 512-row MLP (N 1000-6144) the whole model ran 1.01 -> 1.43 ms. Row scales when
# 1/M + 1/N < 1/_GEMM_ROW_MIN keeps each side where it won.
_GEMM_ROW_MIN = 800
"""fp16 scales per row over all of K ("auto") from M N >= _GEMM_ROW_MIN (M + N) on."""

_GEMM_SMALL_DIM = 8
"""M or N at or below this runs the CUDA-core matrix-vector kernel (families/gemm/match.py's
GEMV_CONFIGS): a tensor-core tile is >= 16 wide, so there it would be mostly padding."""


def _gemm_run(plans, kernels, ops, scalars, dtype, cfg):
    """One call of a GEMM launcher (families/gemm/launch.py renders it). `ops`: a, b, the bias of a
    linear, the epilogue operands; `scalars`: the epilogue's run-time numbers; `dtype`: the output's;
    `kernels`: the launcher's kernels in _gemm_slots order (a pruned one is None: _launch raises);
    `cfg`: (linear, fold, has_bias, the epilogue operands' row-dim constexpr names, precision, fp16
    scales "auto" / "row" / "chunk", gemv kernels?, split-K: False, True (by the shape) or a pinned
    number of K chunks), a constant.
    The plan of the operands' signature is cached (_gemm_new_plan), so a known signature costs the
    lookup, the views, the allocations, the preparation passes (they read the data) and the
    launches with the autotuner's kept pick. The timing protocol counts host time: replanning
    cost a matrix-vector GEMM ~70-96 us per call on an H200."""
    key = []
    for t in ops:
        key += (t.shape, t.stride(), t.dtype, t.device)
    key = tuple(key)
    p = plans.get(key)
    if p is None:
        p = _gemm_new_plan(plans, key, cfg, dtype)
    if p:  # the GEMM's views of a and b (_gemm_plan): the plan's sizes and strides
        av, bv = p.views
        a = ops[0].as_strided(*av) if av else ops[0]
        b = ops[1].as_strided(*bv) if bv else ops[1]
        ext = ops[2 + cfg[2]:]
    else:  # the layout copies an operand: planned on the operands themselves, each call
        p, (a, b, *ext) = _gemm_planner(ops, key[3], cfg, dtype)
    c = torch.empty(p.out_shape, device=key[3], dtype=dtype)
    if not p.total:
        return c
    bias = ops[2] if cfg[2] else c
    if p.eg:
        scalars = (*[x for t, g in zip(ext, p.eg, strict=True) for x in (t, *g)], *scalars)
    # The kernel's operands before the output: b, a for C^T = B^T A^T (the CUDA-core kernel on a
    # small M), or their prepared parts.
    lead = (b, a) if p.swap else _gemm_prepared(a, b, p) if p.prep else (a, b)
    if p.split:
        ws = torch.empty((p.split, p.total), device=key[3], dtype=torch.float32)
        _launch(kernels[p.k], p.grid, p.pick, (*lead, ws, ws, *p.args), p.kw)
        _launch(kernels[p.rk], p.rgrid, p.rpick, (ws, c, bias, *p.rargs, *scalars), p.rkw)
    else:
        _launch(kernels[p.k], p.grid, p.pick, (*lead, c, bias, *p.args, *scalars), p.kw)
    return c


def _gemm_prepared(a, b, p):
    """The kernel's operand arguments before the output under plan p's preparation: the operands'
    K-major copies (_gemm_prep_run: they read the data) and, for the three-dot twins (p.twin:
    p.prep), their lo parts and fp16 scales: both prepared (1, with bounds per row when
    p.row_scaled), only B, A split in registers (2), only A, computing C^T with B^T split in
    registers (3). An operand not copied is its own lo part."""
    al, bl, ra, rb = a, b, None, None
    if p.row_scaled:
        ra = torch.linalg.vector_norm(a, float('inf'), dim=-1).reshape(-1)
        rb = torch.linalg.vector_norm(b, float('inf'), dim=-2).reshape(-1)
    if p.prep != 2:
        a, al, sa = _gemm_prep_run(a, p.prep_a, ra)
        ra = ra if p.row_scaled else sa
    if p.prep != 3:
        b, bl, sb = _gemm_prep_run(b, p.prep_b, rb)
        rb = rb if p.row_scaled else sb
        b, bl = b.transpose(-1, -2), bl.transpose(-1, -2)
    if p.twin == 1:
        return a, b, al, bl, ra, rb
    if p.twin == 2:
        return a, b, al, bl
    if p.twin == 3:
        return b, a, bl, al
    return a, b


def _gemm_slots(x3, split_k):
    """Index in a launcher's kernel tuple of its main kernel, split-K part kernel, split-K
    reduction and first CUDA-core kernel (rows, then cols on C^T); under tf32x3 (x3) each tiled
    kernel's three-dot twins follow it, for `prep` 1, 2, 3."""
    n = 4 if x3 else 1
    return 0, n, 2 * n, 2 * n + 1 if split_k else n


def _gemm_planner(ops, dev, cfg, dtype):
    """The launch plan (_GemmPlan) of a GEMM launcher configured by `cfg` (see _gemm_run) for the
    sizes, strides, dtypes and device `dev` of its operands `ops`, taken on meta operands (or,
    where their layout copies one, on the operands themselves at each call); returns it and the
    GEMM's operands (its views of a and b, the epilogue operands as the kernels read them)."""
    linear, fold, has_bias, rr, precision, scales, gemv, split_k = cfg
    a, b, M, N, K, d0, d1, out_shape, gshape = _gemm_plan(ops[0], ops[1], linear, fold)
    p = _GemmPlan(out_shape, ops[:2], (a, b))
    c = torch.empty(out_shape, device="meta", dtype=dtype)
    p.total = c.numel()
    if not p.total:
        return p, [a, b, *ops[2 + has_bias:]]
    e_ops, e_kw = [], {}
    for t, name in zip(ops[2 + has_bias:], rr, strict=True):
        t, geo, e_kw[name] = _gemm_ext(t, out_shape, gshape)
        e_ops.append(t)
        p.eg.append(geo)
    laid, nb = [a, b, *e_ops], d0[0] * d1[0]
    s_bias = ops[2].stride(0) if has_bias else 0
    x3 = precision == "tf32x3"
    main, part, reduce, fma = _gemm_slots(x3, split_k)
    if gemv and min(M, N) <= _GEMM_SMALL_DIM:
        # Matrix-vector shape: CUDA-core kernel over the large operand, the small dimension in one
        # BLOCK_N (for small M it computes C^T = B^T A^T).
        rows = M if N < M else N
        p.gemv, p.swap, p.k = True, N >= M, fma + (N >= M)
        p.grid = lambda meta: (nb * _cdiv(rows, meta['BLOCK_M']),)
        p.args = _gemm_args(a, b, M, N, K, nb, d0, d1, N >= M, s_bias, K)
        p.kw = dict(e_kw, I64=_i64(a, b, c, *e_ops), BLOCK_N=_npow2(min(M, N)))
        return p, laid
    if precision in ("tf32x3", "tf32"):
        a, b, K, d0, d1 = _gemm_plan_prep(p, a, b, M, N, K, d0, d1, nb, x3, scales)
    i64 = _i64(a, b, c, *e_ops)
    p.twin = p.prep if x3 else 0
    rows = {"ROW_SCALES": p.row_scaled} if p.twin == 1 else {}
    swap = p.prep == 3
    # Rationale: with fewer output tiles than ~2 waves of SMs and a long K, split K into chunks of
    # >= 1024 (>= 32 BLOCK_K steps keep the pipeline full) so every SM works. A count (gemm-split-k's
    # variants) pins the chunks whatever the shape, each >= 128 long (a K shorter than 256 is not split).
    if split_k is True:
        split = min(2 * _sms(dev, 132) // (nb * _cdiv(M, 128) * _cdiv(N, 128)), K // 1024, 32)
    else:
        split = min(int(split_k), K // 128)
    if split >= 2:
        chunk = _cdiv(_cdiv(K, split), 128) * 128
        split = _cdiv(K, chunk)
    if split >= 2:
        big = i64 or _i64(torch.empty((split, p.total), device="meta"))
        p.split, p.k, p.rk = split, part + p.twin, reduce
        p.grid = _gemm_grid(split * nb, N, M) if swap else _gemm_grid(split * nb, M, N)
        p.args = _gemm_args(a, b, M, N, K, nb, d0, d1, swap, 0, chunk)
        p.kw = dict(I64=big, **rows)
        total = p.total
        p.rgrid = lambda meta: (_cdiv(total, meta['BLOCK']),)
        p.rargs = (total, N, split, s_bias)
        p.rkw = dict(e_kw, I64=big)
        return p, laid
    p.k = main + p.twin
    p.grid = _gemm_grid(nb, N, M) if swap else _gemm_grid(nb, M, N)
    p.args = _gemm_args(a, b, M, N, K, nb, d0, d1, swap, s_bias, K)
    p.kw = dict(e_kw, I64=i64, **rows)
    return p, laid


def _gemm_plan_prep(p, a, b, M, N, K, d0, d1, nb, x3, scales):
    """The operand preparation's part of plan p (runtime/gemm_prep.py): its mode and, per copied
    operand, _gemm_prep_plan's plan; returns the GEMM's operands (meta tensors of the copies'
    layout), K and batch strides as the kernel then reads them. x3: tf32x3 (prep 1: A and B copied
    K-major as fp16 hi / lo parts; 2: only B, as TF32 parts, the kernel splits A; 3: only A, the
    kernel computes C^T = B^T A^T, splits B^T); otherwise K-major copies (prep 1), needed only when
    an operand is not K-major."""
    # A copy pays only when each element feeds many outputs, hence the one-side modes for a small
    # N or M; wgmma takes only its left operand from registers, hence C^T for a small M.
    if x3:
        p.prep = (1 if min(M, N) >= _GEMM_PREP_MIN else 2 if M >= _GEMM_PREP_MIN else 3
                  if N >= _GEMM_PREP_MIN else 0) if K else 0
    else:
        p.prep = int(min(M, N) >= _GEMM_PREP_MIN and (a.stride(-1) != 1 or b.stride(-2) != 1))
    if not p.prep:
        return a, b, K, d0, d1
    # The batch strides follow each copy's [nb, rows, KP] layout; an operand not copied is its own
    # lo part (the kernel splits it or ignores the argument). fp16 scales per row of A / column of
    # B over all of K (KernelOpts.f16) when their bounds' extra read pays (_GEMM_ROW_MIN),
    # otherwise per row and 64-wide K chunk.
    psplit = (2 if p.prep == 1 else 1) if x3 else 0
    p.row_scaled = x3 and p.prep == 1 and (
        scales == "row" or scales == "auto" and M * N >= _GEMM_ROW_MIN * (M + N))
    if p.row_scaled:
        psplit = 3
    rows_a, rows_b = ((_GEMM_SCALE_K, M, 1), (_GEMM_SCALE_K, N, 1)) if x3 else ((), ())
    if p.prep != 2:
        kp, p.prep_a = _gemm_prep_plan(a, nb, d1[0], d0[1], d1[1], True, psplit, *rows_a)
        a = torch.empty((nb, M, kp), device="meta")
        d0, d1 = [d0[0], d1[0] * M * kp, d0[2]], [d1[0], M * kp, d1[2]]
    if p.prep != 3:
        kp, p.prep_b = _gemm_prep_plan(b, nb, d1[0], d0[2], d1[2], False, psplit, *rows_b)
        b = torch.empty((nb, N, kp), device="meta").transpose(-1, -2)
        d0, d1 = [d0[0], d0[1], d1[0] * N * kp], [d1[0], d1[1], N * kp]
    return a, b, kp if p.prep == 1 else K, d0, d1


def _gemm_args(a, b, M, N, K, nb, d0, d1, swap, *tail):
    """A GEMM kernel's size and stride arguments, then `tail`; with `swap`, those of C^T = B^T A^T
    (the kernel is launched with the operands exchanged, KernelOpts.swap)."""
    if swap:
        return (N, M, K, nb, d1[0], d0[2], d1[2], b.stride(-1), b.stride(-2), d0[1], d1[1],
                a.stride(-1), a.stride(-2), *tail)
    return (M, N, K, nb, d1[0], d0[1], d1[1], a.stride(-2), a.stride(-1), d0[2], d1[2],
            b.stride(-2), b.stride(-1), *tail)
