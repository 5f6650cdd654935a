"""GEMM experiment 2: pre-split operands written K-major (wgmma's tf32 operands must be K-major
in shared memory), three TF32 dots, flushed to an fp32 CUDA-core accumulator every G steps.
Mode 3 (added after the 2026-11-30 run, not measured yet) prepares only B and splits A in
registers: no preparation traffic for A, which dominates on skinny-N shapes."""
# ruff: noqa: B023  (each timing lambda runs inside its own loop iteration)
import torch
import triton
import triton.language as tl
from gemm_layouts import _r, bench  # the same TF32 rounding and timer as experiment 1


@triton.jit
def split2d_kernel(x_ptr, hi_ptr, lo_ptr, R, C, sr, sc, BR: tl.constexpr, BC: tl.constexpr):
    # x [R, C] with strides (sr, sc) -> hi, lo [R, C] contiguous
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * sr + c[None, :] * sc, mask=m, other=0.0)
    hi = _r(x)
    lo = _r(x - hi)
    o = r[:, None].to(tl.int64) * C + c[None, :]
    tl.store(hi_ptr + o, hi, mask=m)
    tl.store(lo_ptr + o, lo, mask=m)


def split_kmajor(x, k_dim):
    """x 2-D; returns hi, lo contiguous with K (dim k_dim of x) last."""
    v = x if k_dim == 1 else x.t()
    R, C = v.shape
    hi = torch.empty(R, C, device=x.device)
    lo = torch.empty(R, C, device=x.device)
    split2d_kernel[(triton.cdiv(R, 64), triton.cdiv(C, 64))](v, hi, lo, R, C, v.stride(0), v.stride(1),
                                                             BR=64, BC=64, num_warps=4)
    return hi, lo


@triton.jit
def gemm_kernel(ah, al, bh, bl, c, M, N, K, MODE: tl.constexpr, G: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    # ah/al [M, K], bh/bl [N, K], all K-contiguous
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    width = GM * npn
    first = (pid // width) * GM
    gs = tl.minimum(npm - first, GM)
    pm = first + (pid % width) % gs
    pn = (pid % width) // gs
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    ram = rm % M
    rbn = rn % N
    pa = ram[:, None] * K + rk[None, :]
    pb = rk[:, None] + rbn[None, :] * K
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if G == 0:
        for k in range(0, K, BK):
            km = rk < K - k
            a1 = tl.load(ah + pa, mask=km[None, :], other=0.0)
            b1 = tl.load(bh + pb, mask=km[:, None], other=0.0)
            if MODE == 1:
                a2 = tl.load(al + pa, mask=km[None, :], other=0.0)
                b2 = tl.load(bl + pb, mask=km[:, None], other=0.0)
                acc = tl.dot(a1, b2, acc, input_precision="tf32")
                acc = tl.dot(a2, b1, acc, input_precision="tf32")
                acc = tl.dot(a1, b1, acc, input_precision="tf32")
            elif MODE == 2:
                acc = tl.dot(a1, b1, acc, input_precision="tf32")
            else:
                acc = tl.dot(a1, b1, acc, input_precision="tf32x3")
            pa += BK
            pb += BK
    else:
        for k0 in range(0, K, BK * G):
            part = tl.zeros((BM, BN), dtype=tl.float32)
            for g in tl.static_range(G):
                km = rk < K - k0 - g * BK
                b1 = tl.load(bh + pb, mask=km[:, None], other=0.0)
                b2 = tl.load(bl + pb, mask=km[:, None], other=0.0)
                if MODE == 3:  # A raw, split in registers (wgmma takes A from registers)
                    a = tl.load(ah + pa, mask=km[None, :], other=0.0)
                    a1 = _r(a)
                    a2 = _r(a - a1)
                else:
                    a1 = tl.load(ah + pa, mask=km[None, :], other=0.0)
                    a2 = tl.load(al + pa, mask=km[None, :], other=0.0)
                part = tl.dot(a1, b2, part, input_precision="tf32")
                part = tl.dot(a2, b1, part, input_precision="tf32")
                part = tl.dot(a1, b1, part, input_precision="tf32")
                pa += BK
                pb += BK
            acc += part
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=mask)


def run(mode, g, a, b, cfg):
    bm, bn, bk, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device)
    if mode == 1:  # both operands prepared
        ah, al = split_kmajor(a, 1)
        bh, bl = split_kmajor(b, 0)
    elif mode == 3:  # only B prepared; A split in the kernel
        ah = al = a.contiguous()
        bh, bl = split_kmajor(b, 0)
    else:  # B copied K-major
        ah = al = a.contiguous()
        bh = bl = b.t().contiguous()
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    gemm_kernel[grid](ah, al, bh, bl, c, M, N, K, MODE=mode, G=g, BM=bm, BN=bn, BK=bk, GM=8,
                      num_warps=w, num_stages=s)
    return c


CFGS = [(128, 128, 32, 8, 3), (128, 256, 16, 8, 3), (256, 128, 16, 8, 3), (128, 128, 32, 4, 3),
        (128, 64, 32, 4, 4)]
# (mode, G, configs). G = 2 / 4 ran out of shared memory at these tiles on the H200 (dropped).
VARIANTS = [(2, 0, CFGS[:3]), (0, 0, CFGS[:1] + CFGS[3:4]), (1, 0, CFGS), (1, 1, CFGS[:4]),
            (3, 1, CFGS)]
SHAPES = [(3840, 3840, 3840, False), (3072, 2560, 4096, True), (3001, 2711, 4093, False),
          (2048, 6144, 4096, False), (640, 896, 50000, False), (409600, 48, 1280, False)]

if __name__ == "__main__":
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    out_rows = []
    for M, N, K, ta in SHAPES:
        a = torch.randn(K, M, device="cuda").t() if ta else torch.randn(M, K, device="cuda")
        b = torch.randn(K, N, device="cuda")
        ref = a.double() @ b.double()
        t_err = ((a @ b).double() - ref).abs().max().item()
        t_cublas = bench(lambda: a @ b)
        t_split = bench(lambda: (split_kmajor(a, 1), split_kmajor(b, 0)))
        line = [f"{M}x{N}x{K}{'T' if ta else ''}", f"cublas {t_cublas:.3f}", f"split {t_split:.3f}",
                f"terr {t_err:.1e}"]
        for mode, g, cfgs in VARIANTS:
            best = None
            for cfg in cfgs:
                try:
                    out = run(mode, g, a, b, cfg)
                    err = (out.double() - ref).abs().max().item()
                    t = bench(lambda: run(mode, g, a, b, cfg))
                except Exception as e:  # noqa: BLE001
                    print(f"  m{mode} g{g} {cfg}: {type(e).__name__} {str(e)[:100]}", flush=True)
                    continue
                print(f"  {line[0]} m{mode} g{g} {cfg}: {t:.3f} ms err {err:.2e}", flush=True)
                if best is None or t < best[0]:
                    best = (t, cfg, err)
            if best:
                line.append(f"m{mode}g{g} {best[0]:.3f} ({best[2]:.1e}) {best[1]}")
        print(" | ".join(line), flush=True)
        out_rows.append(line)
    print()
    for line in out_rows:
        print(" | ".join(line))
