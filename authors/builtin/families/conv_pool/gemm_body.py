"""Kernel bodies of the implicit-GEMM convolutions (forward and transposed): the K loop over taps
and input channels, at the tile precision the launcher chose (tf32x3, one-pass TF32, or fp16 parts)."""

from __future__ import annotations

_CONSTS = ["KD", "KH", "KW", "SD", "SH", "SW", "PD", "PH", "PW", "DD", "DH", "DW", "HAS_BIAS", "SPLIT", "I64",
           "DIL1", "BLOCK_M", "BLOCK_N", "BLOCK_K"]


def _x_base(parts: str) -> str:
    """Offset of this tile's (image, group) block of the input: strided into x, or the row base
    of the prepared input ([N * groups, pixels, CIGP] channels last, see _a_step)."""
    if parts == "f16":
        return "xo = (nb * (C_IN // CIG) + g) * (D * H * W)"
    return "xo = nb * sxn + (g * CIG) * sxc"


def _a_step(prec: str, parts: str) -> list[str]:
    """One K step: the activation tile X[pixels, channels] at input coordinates (di, hi, wi),
    channels ci of tap t, the weight tile W[channels, C_out] and their tensor-core product.

    f16 (strict fp32, the default): both operands arrive as fp16 hi / lo parts (_gemm_prep, mode 3)
    of the value scaled by a power of two: the input channels last, one scale per (image, group);
    the weight one scale per output channel. Both are constant along an output pixel's K, so the
    three fp16 dots go into a fresh partial sum added in fp32 and the inverse scales are applied
    once after the loop (_f16_rescale). Per-(pixel, chunk) scales, as the GEMMs use, cost a gather
    and a multiply per step: 15-20% of the kernel's time on an H200 (level1/43, level2/14, 21).
    tf32: the weight arrives as TF32 hi / lo parts (rows padded to CIGP) and the gathered fp32
    activation tile is split in registers, three TF32 dots. One plain pass under the `tf32`
    policy."""
    w_off = "(t * C_OUT + co)[None, :] * CIGP + ci[:, None]"
    w_mask = "mask=k_ok[:, None] & n_ok[None, :], other=0.0"
    if parts == "f16" and prec == "tf32x3":
        return ["    xr = xo + (di * H + hi) * W + wi",
                "    x_off = xr[:, None] * CIGP + ci[None, :]",
                "    xh = tl.load(x + x_off, mask=a_ok[:, None], other=0.0)",
                "    xl = tl.load(xlo + x_off, mask=a_ok[:, None], other=0.0)",
                f"    wh = tl.load(wt + {w_off}, mask=n_ok[None, :], other=0.0)",
                f"    wl = tl.load(wtl + {w_off}, mask=n_ok[None, :], other=0.0)",
                "    part = tl.dot(xh, wl)",
                "    part = tl.dot(xl, wh, acc=part)",
                "    part = tl.dot(xh, wh, acc=part)",
                "    acc += part"]
    load = ["    xk = tl.load(x + ((xo + di * sxd + hi * sxh + wi * sxw)[:, None] + ci[None, :] * sxc),",
            "                 mask=a_ok[:, None] & k_ok[None, :], other=0.0)",
            f"    wk = tl.load(wt + {w_off}, {w_mask})"]
    if prec != "tf32x3":
        return [*load, f"    acc = tl.dot(xk, wk, acc, input_precision=\"{prec}\")"]
    return [*load,
            f"    wl = tl.load(wtl + {w_off}, {w_mask})",
            "    xh = _gemm_round_tf32(xk)",
            "    xl = _gemm_round_tf32(xk - xh)",
            '    part = tl.dot(xh, wl, input_precision="tf32")',
            '    part = tl.dot(xl, wk, acc=part, input_precision="tf32")',
            '    part = tl.dot(xh, wk, acc=part, input_precision="tf32")',
            "    acc += part"]


def _f16_rescale(parts: str) -> list[str]:
    """After the K loop of the fp16-parts kernel: undo the operands' scales, rebuilt from the same
    bounds the preparation used (xsc: per (image, group); wsc: per output channel)."""
    if parts != "f16":
        return []
    return ["fx = tl.load(xsc + nb * (C_IN // CIG) + g, mask=m_ok, other=0.0)",
            "fx = _gemm_exp2(_gemm_pow2_exp(fx) - 14)",
            "fw = _gemm_exp2(_gemm_pow2_exp(tl.load(wsc + co, mask=n_ok, other=0.0)) - 14)",
            "acc = acc * (fx[:, None] * fw[None, :])"]


def _forward_body(prec: str, parts: str) -> list[str]:
    return ["pid = tl.program_id(0)",
            "g = tl.program_id(1)",
            "tiles_n = tl.cdiv(COG, BLOCK_N)",
            "rm = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)",
            "rn = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)",
            "rk = tl.arange(0, BLOCK_K)",
            "if I64:",
            "    g = g.to(tl.int64)",
            "    rm = rm.to(tl.int64)",
            "    rk = rk.to(tl.int64)",
            "S = OD * OH * OW",
            "nb = rm // S",
            "sp = rm % S",
            "od = sp // (OH * OW)",
            "oh = (sp // OW) % OH",
            "ow = sp % OW",
            "m_ok = rm < M",
            "n_ok = rn < COG",
            "co = g * COG + rn",
            "d0 = od * SD - PD",
            "h0 = oh * SH - PH",
            "w0 = ow * SW - PW",
            _x_base(parts),
            "KC = tl.cdiv(CIG, BLOCK_K)",
            "acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)",
            "for kk in range(0, KD * KH * KW * KC):",
            "    t = kk // KC",
            "    kc = kk % KC",
            "    ci = kc * BLOCK_K + rk",
            "    kd = t // (KH * KW)",
            "    kh = (t // KW) % KH",
            "    kw = t % KW",
            "    di = d0 + kd * DD",
            "    hi = h0 + kh * DH",
            "    wi = w0 + kw * DW",
            "    a_ok = m_ok & (di >= 0) & (di < D) & (hi >= 0) & (hi < H) & (wi >= 0) & (wi < W)",
            "    k_ok = ci < CIG",
            *_a_step(prec, parts),
            *_f16_rescale(parts),
            "acc = tl.trans(acc)"]


def _transposed_body(prec: str, parts: str) -> list[str]:
    return ["pid = tl.program_id(0)",
            "gp = tl.program_id(1)",
            "g = gp // (SD * SH * SW)",
            "ph = gp % (SD * SH * SW)",
            "rd = ph // (SH * SW)",
            "rh = (ph // SW) % SH",
            "rw = ph % SW",
            "tiles_n = tl.cdiv(COG, BLOCK_N)",
            "rm = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)",
            "rn = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)",
            "rk = tl.arange(0, BLOCK_K)",
            "if I64:",
            "    g = g.to(tl.int64)",
            "    rm = rm.to(tl.int64)",
            "    rk = rk.to(tl.int64)",
            # Outputs of this phase per dim; tile pixels index the phase's own grid. Only the flat
            # output index sp crosses the loop; od / oh / ow are re-formed after it (keeping them
            # live across the loop made ptxas spill).
            "QD = tl.cdiv(OD - rd, SD)",
            "QH = tl.cdiv(OH - rh, SH)",
            "QW = tl.cdiv(OW - rw, SW)",
            "m_ok = rm < NB * QD * QH * QW",
            # (a phase can be empty when an output dim is shorter than the stride: guard divisors)
            "QW1 = tl.maximum(QW, 1)",
            "QHW = tl.maximum(QH, 1) * QW1",
            "nb = rm // (tl.maximum(QD, 1) * QHW)",
            "q = rm % (tl.maximum(QD, 1) * QHW)",
            "qd = q // QHW",
            "qh = (q % QHW) // QW1",
            "qw = q % QW1",
            "sp = ((qd * SD + rd) * OH + qh * SH + rh) * OW + qw * SW + rw",
            "n_ok = rn < COG",
            "co = g * COG + rn",
            # Taps of this phase: with dilation 1 exactly those k = k0 + j * stride.
            "if DIL1:",
            "    kd0 = (rd + PD) % SD",
            "    kh0 = (rh + PH) % SH",
            "    kw0 = (rw + PW) % SW",
            "    nkd = (KD - kd0 + SD - 1) // SD",
            "    nkh = (KH - kh0 + SH - 1) // SH",
            "    nkw = (KW - kw0 + SW - 1) // SW",
            "    std = SD",
            "    sth = SH",
            "    stw = SW",
            "else:",
            "    kd0 = 0",
            "    kh0 = 0",
            "    kw0 = 0",
            "    nkd = KD",
            "    nkh = KH",
            "    nkw = KW",
            "    std = 1",
            "    sth = 1",
            "    stw = 1",
            _x_base(parts),
            "KC = tl.cdiv(CIG, BLOCK_K)",
            "acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)",
            "for kk in range(0, nkd * nkh * nkw * KC):",
            "    tt = kk // KC",
            "    kc = kk % KC",
            "    ci = kc * BLOCK_K + rk",
            "    kd = kd0 + (tt // (nkh * nkw)) * std",
            "    kh = kh0 + ((tt // nkw) % nkh) * sth",
            "    kw = kw0 + (tt % nkw) * stw",
            "    ed = rd + PD - kd * DD",
            "    eh = rh + PH - kh * DH",
            "    ew = rw + PW - kw * DW",
            "    ok = ((ed % SD) == 0) & ((eh % SH) == 0) & ((ew % SW) == 0)",
            "    di = qd + ed // SD",
            "    hi = qh + eh // SH",
            "    wi = qw + ew // SW",
            "    a_ok = m_ok & ok & (di >= 0) & (di < D) & (hi >= 0) & (hi < H) & (wi >= 0) & (wi < W)",
            "    k_ok = ci < CIG",
            "    t = (kd * KH + kh) * KW + kw",
            *_a_step(prec, parts),
            *_f16_rescale(parts),
            "acc = tl.trans(acc)",
            "od = qd * SD + rd",
            "oh = qh * SH + rh",
            "ow = qw * SW + rw"]
