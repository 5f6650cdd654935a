"""Launcher-side helpers shared by every GEMM region of a generated file: batch-dim collapse,
epilogue operand geometry, launch plans, grids.

Pasted into a solution with a GEMM (runtime.GEMM_RUNTIME), after runtime/common.py, whose helpers
it calls.
"""

from .common import _bshape, _cdiv, _merge_dims, _meta_ops


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
    """A GEMM launcher's launch plan for one operand signature, filled in by the launcher's `_plan`
    function from the operands' metadata only; a call allocates, prepares and launches from it."""

    def __init__(self, out_shape, ops, views):
        self.out_shape = out_shape
        # Sizes and strides of the GEMM views of a and b (_gemm_plan), None where the view is the
        # operand as it is: a call takes them with as_strided (these views keep the storage offset).
        self.views = [None if (v.shape, v.stride()) == (t.shape, t.stride()) else (v.shape, v.stride())
                      for t, v in zip(ops, views, strict=True)]
        self.eg = []  # each epilogue operand's geometry (_gemm_ext)
        self.gemv = self.swap = False  # the CUDA-core kernel; on C^T = B^T A^T
        self.prep, self.row_scaled = 0, False  # operand preparation mode; fp16 scales per row
        self.prep_a = self.prep_b = None  # _gemm_prep_plan of each prepared operand
        self.split = 0  # K chunks (split-K), 0 for none
        self.grid = self.args = self.kw = None  # the GEMM kernel's grid, integer arguments, keywords
        self.rgrid = self.rargs = self.rkw = None  # the same for the split-K reduction
        self.pick, self.rpick = [], []  # their autotuning picks (_launch)


def _gemm_new_plan(plans, key, planner):
    """Plan a GEMM launcher's missing key on meta operands (planner(ops, device) -> (plan, the
    GEMM's operands)) and cache it; as in _new_plan, a layout that copies an operand (a reshape
    that cannot be a view, an epilogue operand _gemm_ext materialises) caches the empty marker (),
    and the launcher then plans each call on its own operands. The meta operands start at storage
    offset 1, which views keep and copies do not (autograd's view tracking is off in inference
    mode, so it cannot tell)."""
    metas = [t.as_strided(t.shape, t.stride(), 1) for t in _meta_ops(key)]
    plan, laid = planner(metas, key[3])
    plans[key] = plan = plan if all(t.storage_offset() == 1 for t in laid) else ()
    return plan


def _gemm_grid(n, M, N):
    """Grid of a tiled GEMM kernel: n (batches, or K chunks x batches) x the tiles of M x N. A
    function, so that a plan's grid keeps the sizes it was built with."""
    return lambda meta: (n * _cdiv(M, meta['BLOCK_M']) * _cdiv(N, meta['BLOCK_N']),)
