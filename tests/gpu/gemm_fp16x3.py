"""GEMM experiment 3: the error-compensated triple in fp16 instead of TF32.

An fp32 value scaled by a power of two s is split into fp16 hi + lo (11 + 11 significant bits,
as TF32 hi + lo), so hi*hi + hi*lo + lo*hi recovers ~22 bits like 3xTF32. fp16 tensor cores run
twice TF32's rate and the prepared operands take half the bytes. The scale s = 2^(14 - e), with
2^e <= max|x| < 2^(e+1), keeps every scaled value below 2^15 (fp16 overflows at 65504); values
more than ~2^-24 below the tensor's max fall into fp16 subnormals, an absolute error of at most
max|x| * 2^-38, far below fp32 rounding of the dot product itself.

Modes: F1 both operands prepared (fp16 hi / lo, K-major), F3 B prepared and A split in
registers; against cuBLAS strict fp32 and the TF32 triple with both prepared (mode 1 of
gemm_prepared.py). Inputs: randn, a signed rescale (x*4-2), and rows spread over 10^-3..10^3
(stresses a per-tensor scale)."""
# ruff: noqa: B023  (each timing lambda runs inside its own loop iteration)
import torch
import triton
import triton.language as tl
from gemm_layouts import bench
from gemm_prepared import run as run_tf32


def pow2_scale(x: torch.Tensor) -> torch.Tensor:
    """Device scalar 2^(14 - floor(log2 max|x|)); 1 for an all-zero or non-finite tensor."""
    amax = x.abs().amax().float()
    ok = torch.isfinite(amax) & (amax > 0)
    e = torch.floor(torch.log2(torch.where(ok, amax, torch.ones_like(amax))))
    return torch.exp2(14.0 - e).reshape(1)


@triton.jit
def split16_kernel(x_ptr, s_ptr, hi_ptr, lo_ptr, R, C, sr, sc, BR: tl.constexpr, BC: tl.constexpr):
    # x [R, C] fp32 with strides (sr, sc) -> hi, lo [R, C] fp16 contiguous, scaled by *s_ptr
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None].to(tl.int64) * sr + c[None, :] * sc, mask=m, other=0.0)
    x = x * tl.load(s_ptr)
    hi = x.to(tl.float16)
    lo = (x - hi.to(tl.float32)).to(tl.float16)
    o = r[:, None].to(tl.int64) * C + c[None, :]
    tl.store(hi_ptr + o, hi, mask=m)
    tl.store(lo_ptr + o, lo, mask=m)


def split16_kmajor(x, k_dim, s):
    v = x if k_dim == 1 else x.t()
    R, C = v.shape
    hi = torch.empty(R, C, device=x.device, dtype=torch.float16)
    lo = torch.empty(R, C, device=x.device, dtype=torch.float16)
    split16_kernel[(triton.cdiv(R, 64), triton.cdiv(C, 64))](v, s, hi, lo, R, C, v.stride(0),
                                                              v.stride(1), BR=64, BC=64, num_warps=4)
    return hi, lo


@triton.jit
def gemm16_kernel(ah, al, bh, bl, sa_ptr, sb_ptr, c, M, N, K, sam, sak, MODE: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    # MODE 1: ah/al [M, K] fp16; MODE 3: ah raw fp32 with strides (sam, sak). bh/bl [N, K] fp16.
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
    ram = (rm % M).to(tl.int64)
    rbn = rn % N
    pa = ram[:, None] * sam + rk[None, :] * sak
    pb = rk[:, None] + rbn[None, :] * K
    sa = tl.load(sa_ptr)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        km = rk < K - k
        b1 = tl.load(bh + pb, mask=km[:, None], other=0.0)
        b2 = tl.load(bl + pb, mask=km[:, None], other=0.0)
        if MODE == 3:
            a = tl.load(ah + pa, mask=km[None, :], other=0.0) * sa
            a1 = a.to(tl.float16)
            a2 = (a - a1.to(tl.float32)).to(tl.float16)
        else:
            a1 = tl.load(ah + pa, mask=km[None, :], other=0.0)
            a2 = tl.load(al + pa, mask=km[None, :], other=0.0)
        part = tl.dot(a1, b2)
        part = tl.dot(a2, b1, part)
        part = tl.dot(a1, b1, part)
        acc += part
        pa += BK * sak
        pb += BK
    acc = acc * (1.0 / (sa * tl.load(sb_ptr)))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c + rm[:, None].to(tl.int64) * N + rn[None, :], acc, mask=mask)


def run16(mode, a, b, cfg):
    bm, bn, bk, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device)
    sa, sb = pow2_scale(a), pow2_scale(b)
    bh, bl = split16_kmajor(b, 0, sb)
    if mode == 1:
        ah, al = split16_kmajor(a, 1, sa)
        sam, sak = K, 1
    else:
        ah = al = a
        sam, sak = a.stride(0), a.stride(1)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    gemm16_kernel[grid](ah, al, bh, bl, sa, sb, c, M, N, K, sam, sak, MODE=mode, BM=bm, BN=bn,
                        BK=bk, GM=8, num_warps=w, num_stages=s)
    return c


CFGS16 = [(128, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 128, 32, 4, 4), (128, 64, 64, 4, 4),
          (64, 64, 64, 4, 3), (128, 128, 64, 4, 3)]
CFG_TF32 = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4)]
SHAPES = [(3840, 3840, 3840), (3001, 2711, 4093), (2048, 2816, 6144), (640, 896, 50000),
          (409600, 48, 1280), (8000, 1536, 2304)]


def inputs(kind, M, N, K):
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(K, N, device="cuda")
    if kind == "signed":
        a, b = a * 4 - 2, b * 4 - 2
    elif kind == "rows":  # rows over six decades: a per-tensor scale leaves small rows few bits
        a = a * torch.logspace(-3, 3, M, device="cuda")[torch.randperm(M, device="cuda")][:, None]
    return a, b


def best(fn, cfgs, a, b, ref):
    out = None
    for cfg in cfgs:
        try:
            c = fn(a, b, cfg)
            err = ((c.double() - ref).abs() / (ref.abs() + 1)).max().item()
            t = bench(lambda: fn(a, b, cfg))
        except Exception as e:  # noqa: BLE001
            print(f"    {cfg}: {type(e).__name__} {str(e)[:90]}", flush=True)
            continue
        if out is None or t < out[0]:
            out = (t, err, cfg)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for M, N, K in SHAPES:
        for kind in ("randn", "signed", "rows"):
            a, b = inputs(kind, M, N, K)
            ref = a.double() @ b.double()
            t_err = (((a @ b).double() - ref).abs() / (ref.abs() + 1)).max().item()
            line = [f"{M}x{N}x{K} {kind}", f"cublas {bench(lambda: a @ b):.3f} ({t_err:.1e})"]
            if kind == "randn":
                for name, fn, cfgs in (("tf32x3 both", lambda a, b, c: run_tf32(1, 1, a, b, c), CFG_TF32),
                                       ("f16 both", lambda a, b, c: run16(1, a, b, c), CFGS16),
                                       ("f16 B-only", lambda a, b, c: run16(3, a, b, c), CFGS16)):
                    r = best(fn, cfgs, a, b, ref)
                    if r:
                        line.append(f"{name} {r[0]:.3f} ({r[1]:.1e}) {r[2]}")
            else:  # accuracy only, at the first config
                for name, mode in (("f16 both", 1), ("f16 B-only", 3)):
                    c = run16(mode, a, b, CFGS16[0])
                    line.append(f"{name} err {((c.double() - ref).abs() / (ref.abs() + 1)).max().item():.1e}")
            print(" | ".join(line), flush=True)
            rows.append(line)
    print()
    for line in rows:
        print(" | ".join(line))
