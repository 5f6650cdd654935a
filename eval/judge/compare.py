"""Comparing a candidate's outputs with the reference's, judged against float64.

On signed inputs long reductions cancel, and an exact-fp32 kernel that sums in another order
can miss a fixed absolute tolerance on near-zero outputs (an H200 K=8192 GEMM: cuBLAS's own
fp32 result fails allclose(1e-4) against float64). So a candidate passes when it is within
the tolerance of the float64 reference, or when its error is within a small multiple of
PyTorch's own fp32 error on the same inputs (`ref32`: computed with TF32 on under --allow-tf32, so
the tolerance follows the policy); the verdict names the rule that passed it.

The default absolute tolerance scales with the output's magnitude (times min(1, RMS of the
reference)): a fixed 1e-4 passed bf16 arithmetic on outputs near 4e-3, whose rounding error is
~1e-5. An explicit `atol` stays absolute: the caller chose it.

Perturbed trials pass `skip_nonfinite`: elements where the float64 or the fp32 reference is NaN/Inf
(a perturbed input outside the operator's domain there) are left out of the comparison, never the
whole trial; where the reference is finite a NaN/Inf output still fails.

Outputs are compared in chunks of CHUNK_ELEMENTS (eval/judge/chunks.py), so the float64 temporaries
never grow with the output: chunking changes memory, never the decision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..harness import flatten
from .chunks import Piece, pieces, take

# Rationale: errors of two correct fp32 summation orders are random walks of the same
# variance; 5x the reference's own max / L2 error leaves room for an unlucky order while a
# real bug (a dropped term, a wrong index) is orders of magnitude larger.
ERROR_MULTIPLE = 5.0

FP32_TOL = 1e-4
LOW_PRECISION_TOL = 1e-2

# Rationale: 2^24 elements keep each float64 temporary of a chunk at 128 MiB and the handful alive
# at once under 1 GiB, whatever the output's size (the whole-tensor comparison held several
# full-size float64 copies: 14 GiB each for a 7.5 GB fp32 output on an H200, which ran out of
# memory); a chunk that size is still milliseconds of GPU work, so the per-chunk Python and
# synchronisation cost stays small. Tests pass a tiny `chunk` to drive the chunked path.
CHUNK_ELEMENTS = 1 << 24


@dataclass
class Verdict:
    ok: bool
    rule: str | None = None
    reason: str | None = None
    max_abs_err: float = 0.0
    torch_err: float = 0.0
    masked: int = 0
    """Elements left out because the reference is non-finite there (`skip_nonfinite` only)."""


def default_tolerance(dtype: torch.dtype) -> float:
    return LOW_PRECISION_TOL if dtype in (torch.float16, torch.bfloat16) else FP32_TOL


def compare(out: Any, ref64: Any, ref32: Any, atol: float | None = None,
            rtol: float | None = None, chunk: int | None = None,
            skip_nonfinite: bool = False) -> Verdict:
    """Judge `out` against the float64 reference `ref64`; `ref32` is PyTorch's fp32 result.
    `ref64` may live on another device (the host, when it did not fit): chunks travel.
    `skip_nonfinite`: leave out the elements where either reference is NaN/Inf (perturbed
    trials) instead of requiring the output to reproduce them."""
    got, want, base = flatten(out), flatten(ref64), flatten(ref32)
    if len(got) != len(want):
        return Verdict(False, reason=f"output structure differs: {len(got)} leaves, expected {len(want)}")
    rules: set[str] = set()
    worst = Verdict(True)
    for (path, o), (_, r64), (_, r32) in zip(got, want, base, strict=True):
        v = _compare_leaf(path, o, r64, r32, atol, rtol, chunk or CHUNK_ELEMENTS, skip_nonfinite)
        if not v.ok:
            return v
        if v.rule:
            rules.add(v.rule)
        worst.max_abs_err = max(worst.max_abs_err, v.max_abs_err)
        worst.torch_err = max(worst.torch_err, v.torch_err)
        worst.masked += v.masked
    worst.rule = "fp32-error-multiple" if "fp32-error-multiple" in rules else "tolerance"
    return worst


def _compare_leaf(path: str, o: Any, r64: Any, r32: Any, atol: float | None,
                  rtol: float | None, chunk: int, skip: bool) -> Verdict:
    if not isinstance(r32, torch.Tensor):
        if isinstance(o, torch.Tensor):
            return Verdict(False, reason=f"{path}: got a tensor, expected {type(r32).__name__}")
        if skip and isinstance(r32, float) and not (math.isfinite(r32) and math.isfinite(r64)):
            return Verdict(True, "tolerance", masked=1)
        ok = o == r32 if not isinstance(r32, float) else abs(float(o) - r64) <= 1e-4 * (1 + abs(r64))
        return Verdict(bool(ok), "tolerance", None if ok else f"{path}: got {o!r}, expected {r32!r}")
    if not isinstance(o, torch.Tensor):
        return Verdict(False, reason=f"{path}: got {type(o).__name__}, expected a tensor")
    if o.shape != r32.shape:
        return Verdict(False, reason=f"{path}: shape {tuple(o.shape)}, expected {tuple(r32.shape)}")
    if o.dtype != r32.dtype:
        return Verdict(False, reason=f"{path}: dtype {o.dtype}, expected {r32.dtype}")
    o, r64, r32 = o.detach(), r64.detach(), r32.detach()
    if not (o.is_floating_point() or o.is_complex()):
        counts = []  # (mismatches, PyTorch's own) per chunk, read back once
        for p in pieces(o.shape, chunk):
            oc, r64c, r32c = take(o, p), take(r64, p).to(o.device), take(r32, p).to(o.device)
            counts.append(torch.stack([(oc != r64c.to(o.dtype)).sum(), (r32c != r64c.to(r32.dtype)).sum()]))
        mismatches, own = (int(v) for v in torch.stack(counts).sum(0).tolist()) if counts else (0, 0)
        allowed = 2 * own
        if mismatches > allowed:
            return Verdict(False, reason=f"{path}: {mismatches} of {o.numel()} elements differ")
        return Verdict(True, "tolerance" if mismatches == 0 else "fp32-error-multiple")
    tol = default_tolerance(o.dtype)
    a = tol if atol is None else atol
    r = a if rtol is None else rtol
    # The scaled tolerance stays on the device: the leaf's statistics are still read back once.
    a_eff = a * _rms(r32, o.device, chunk).clamp_max_(1.0) if atol is None else a
    s = _Scan(skip=skip)
    for p in pieces(o.shape, chunk):
        s.add(p, take(o, p).double(), take(r64, p).to(o.device).double(), take(r32, p).to(o.device),
              a_eff, r)
    s.finish()
    if s.nonfinite:
        return Verdict(False, reason=f"{path}: {s.nonfinite} NaN/Inf values where the reference is finite")
    if s.unreproduced:
        return Verdict(False, reason=f"{path}: non-finite reference values not reproduced")
    if s.within:
        return Verdict(True, "tolerance", max_abs_err=s.max_err, torch_err=s.torch_err, masked=s.masked)
    if (s.torch_err > 0 and s.max_err <= ERROR_MULTIPLE * s.torch_err
            and s.l2 <= ERROR_MULTIPLE * s.torch_l2):
        return Verdict(True, "fp32-error-multiple", max_abs_err=s.max_err, torch_err=s.torch_err,
                       masked=s.masked)
    # The element furthest outside its own bound: near-zero outputs fail at a smaller error
    # than the largest one, and the message should point at the one that failed.
    _, where, err, got, want = s.worst
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(where), o.shape)) if o.dim() else ()
    scaled = f" ({a:g} x the output's RMS {s.a_eff / a:.3g})" if s.a_eff < a else ""
    return Verdict(False, reason=(f"{path}: error {err:.3g} at {idx} (got {got:.6g}, expected "
                                  f"{want:.6g}); tolerance {s.a_eff:.3g}{scaled}+{r:g}*|ref|, "
                                  f"max error {s.max_err:.3g}, PyTorch's own {s.torch_err:.3g}"),
                   max_abs_err=s.max_err, torch_err=s.torch_err, masked=s.masked)


def _rms(r32: torch.Tensor, device: torch.device, chunk: int) -> torch.Tensor:
    """The root mean square of the reference's finite elements, as a float64 scalar on `device`
    (not read back). PyTorch's own result stands for the float64 one here: it lives on the
    output's device, and a magnitude does not need its last bits."""
    parts = []
    for p in pieces(r32.shape, chunk):
        c = take(r32, p).to(device).double()
        finite = torch.isfinite(c)
        parts.append(torch.stack([torch.where(finite, c, 0.0).square_().sum(), finite.sum().double()]))
    if not parts:
        return torch.zeros((), dtype=torch.float64, device=device)
    total = torch.stack(parts).sum(0)
    return total[0].div(total[1].clamp_min(1.0)).sqrt_()


def comparable(ref64: Any, ref32: Any, chunk: int | None = None) -> tuple[int, int]:
    """(elements where both references are finite, all elements) over the float tensor leaves,
    counted chunk by chunk and read back once: a perturbed trial with none to compare is skipped."""
    counts: list[torch.Tensor] = []
    total = 0
    for (_, r64), (_, r32) in zip(flatten(ref64), flatten(ref32), strict=True):
        if not (isinstance(r32, torch.Tensor) and r32.is_floating_point()):
            continue
        total += r32.numel()
        for p in pieces(r32.shape, chunk or CHUNK_ELEMENTS):
            c32 = take(r32, p)
            # The mask travels, not the float64 chunk (ref64 may live on the host).
            both = torch.isfinite(take(r64, p)).to(c32.device) & torch.isfinite(c32)
            counts.append(both.sum().to(counts[0].device if counts else c32.device))
    return (int(torch.stack(counts).sum()) if counts else 0), total


def _nanmax(a: float, b: float) -> float:
    """max() that keeps a NaN, as torch's max over a whole tensor does."""
    return a if a != a else b if b != b else max(a, b)


@dataclass
class _Scan:
    """One float leaf's statistics, accumulated chunk by chunk in row-major order. Maxima, counts
    and the all-within test are exact whatever the chunking; the L2 norms combine per chunk with
    hypot, equal to the whole tensor's norm up to the last bits of rounding.

    A chunk's statistics stay on the device as one small tensor until `finish`, which reads them all at
    once: one synchronisation per leaf instead of a dozen per chunk. Each one cost the judge a GIL
    hand-over while its background imports ran (eval/timing/warm_imports.py), which made a comparison of
    under 0.1 s of GPU work take 1-7 s of an evaluation on an H200 (2026-12-02,
    tests/gpu/compare_cost.py, problems/measurements/h200-2026-12-02-comparison/)."""

    skip: bool = False
    """Leave out elements where either reference is non-finite (compare's `skip_nonfinite`)."""
    nonfinite: int = 0
    """NaN/Inf in the output where the reference is finite (counted over every chunk)."""
    unreproduced: bool = False
    """A non-finite reference value the output does not reproduce."""
    within: bool = True
    max_err: float = 0.0
    torch_err: float = 0.0
    l2: float = 0.0
    torch_l2: float = 0.0
    masked: int = 0
    a_eff: float = 0.0
    """The absolute tolerance applied (the default one scaled by the output's magnitude)."""
    worst: tuple[float, int, float, float, float] = (-math.inf, 0, 0.0, 0.0, 0.0)
    """(error / bound, flat index, error, got, expected) of the element furthest outside its bound;
    the first such element, as torch's argmax gives, a NaN ratio winning as it does there."""
    pending: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    """(offset, statistics) of the chunks `add` queued and `finish` has not read yet."""

    def add(self, p: Piece, o64: torch.Tensor, r64: torch.Tensor, r32: torch.Tensor,
            a: float | torch.Tensor, r: float) -> None:
        """Queue one chunk's statistics, computed on its device without reading them back."""
        finite = torch.isfinite(r64)
        if self.skip:
            finite &= torch.isfinite(r32)
        off = ~finite
        nonfinite = (finite & ~torch.isfinite(o64)).sum()
        if self.skip:  # left out, not reproduced
            unreproduced, masked = torch.zeros_like(nonfinite), off.sum()
        else:
            unreproduced = (off & ~((o64 == r64) | (torch.isnan(o64) & torch.isnan(r64)))).any()
            masked = torch.zeros_like(nonfinite)
        # Out of place first (o64 is `o` itself when the output is float64), in place after.
        diff = torch.sub(o64, r64).abs_().masked_fill_(off, 0.0)
        torch_diff = torch.sub(r32.double(), r64).abs_().masked_fill_(off, 0.0)
        bound = r64.abs().masked_fill_(off, 0.0).mul_(r).add_(a)
        within = (diff <= bound).all()
        ratio = diff / bound.clamp_min_(1e-30)
        j = ratio.argmax().view(1)
        at = [t.index_select(0, j).squeeze(0) for t in (ratio, diff, o64, r64)]
        stats = [nonfinite, unreproduced, within, diff.max(), torch_diff.max(), diff.norm(),
                 torch_diff.norm(), j.squeeze(0), *at, masked,
                 a if isinstance(a, torch.Tensor) else diff.new_full((), a)]  # no host copy
        self.pending.append((p.offset, torch.stack([t.to(torch.float64) for t in stats])))

    def finish(self) -> None:
        """Read every queued chunk's statistics (one synchronisation) and fold them in, in order,
        exactly as chunk-by-chunk reading would: once a chunk holds a NaN/Inf the reference does
        not, or an unreproduced non-finite value, the verdict is settled and only the NaN/Inf
        count still matters for the message."""
        if not self.pending:
            return
        rows = torch.stack([t for _, t in self.pending]).tolist()  # one copy to the host
        for (offset, _), row in zip(self.pending, rows, strict=True):
            (nonfinite, unreproduced, within, max_err, torch_err, l2, torch_l2, j, q, d, got, want,
             masked, self.a_eff) = row
            self.nonfinite += int(nonfinite)
            self.masked += int(masked)
            if self.nonfinite or self.unreproduced:
                continue
            if unreproduced:
                self.unreproduced = True
                continue
            self.within = self.within and bool(within)
            self.max_err = _nanmax(self.max_err, max_err)
            self.torch_err = _nanmax(self.torch_err, torch_err)
            self.l2 = math.hypot(self.l2, l2)
            self.torch_l2 = math.hypot(self.torch_l2, torch_l2)
            best = self.worst[0]
            if best == best and (q != q or q > best):
                self.worst = (q, offset + int(j), d, got, want)
        self.pending = []


def changes_across(outputs: list[Any], chunk: int | None = None) -> bool:
    """False when every trial's reference output is (near) identical: a degenerate problem."""
    track = ChangeTracker(chunk)
    for out in outputs:
        track.add(out)
    return track.varies()


# Rationale: the degenerate-problem warning needs to know whether outputs vary across trials, not
# where: a fixed, evenly spread sample of each large output decides it. Copying whole outputs to the
# host for it cost 1-2.4 s per evaluation on an H200 (1-4 GB outputs, 2026-12-02,
# problems/measurements/h200-2026-12-02-cost/).
SAMPLE_ELEMENTS = 1 << 20


class ChangeTracker:
    """changes_across, one trial at a time: it keeps the first trial's output only (on the host,
    where it waits for the others without taking device memory; a tensor of more than
    SAMPLE_ELEMENTS by the same evenly spread sample of its elements in every trial), and nothing
    once one differs."""

    def __init__(self, chunk: int | None = None, sample: int = SAMPLE_ELEMENTS):
        self.chunk, self.sample = chunk or CHUNK_ELEMENTS, sample
        self.first: list[tuple[Any, float]] | None = None
        """The first output's leaves with the scale of each float tensor (max |value|)."""
        self.seen, self.changed = 0, False

    def add(self, out: Any) -> None:
        self.seen += 1
        if self.changed:
            return
        leaves = [_sampled(leaf, self.sample) for _, leaf in flatten(out)]
        if self.first is None:
            self.first = [(_host(v), _scale(v, self.chunk) if _is_float(v) else 0.0) for v in leaves]
            return
        if any(self._differs(f, scale, v) for (f, scale), v in zip(self.first, leaves, strict=False)):
            self.changed, self.first = True, None

    def varies(self) -> bool:
        return self.seen < 2 or self.changed

    def _differs(self, first: Any, scale: float, other: Any) -> bool:
        if not _is_float(first):
            if isinstance(first, torch.Tensor) and isinstance(other, torch.Tensor):
                return not _same(first.to(other.device), other)
            return not _same(first, other)
        d = _max_over_chunks(first.shape, self.chunk, lambda p: (
            take(other, p).double() - take(first, p).to(other.device).double()).abs().max())
        return d > 1e-6 * max(scale, 1e-12)


def _sampled(v: Any, n: int) -> Any:
    """`n` elements of `v` at evenly spaced row-major positions (all of `v` when it is no larger),
    gathered by index so a non-contiguous output is never copied whole."""
    if not isinstance(v, torch.Tensor) or v.numel() <= n:
        return v
    flat = torch.arange(n, device=v.device) * (v.numel() // n)
    return v.detach()[torch.unravel_index(flat, v.shape)]


def _is_float(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.is_floating_point()


def _host(v: Any) -> Any:
    return v.detach().to("cpu") if isinstance(v, torch.Tensor) else v


def _scale(t: torch.Tensor, chunk: int) -> float:
    return _max_over_chunks(t.shape, chunk, lambda p: take(t, p).double().abs().max())


def _max_over_chunks(shape: torch.Size, chunk: int, piece_max: Callable[[Piece], torch.Tensor]) -> float:
    """The largest of `piece_max` over the pieces of `shape`, NaN winning as _nanmax keeps it,
    read back from the device once (0.0 for no element)."""
    maxima = [piece_max(p) for p in pieces(shape, chunk)]
    d = 0.0
    for m in torch.stack(maxima).tolist() if maxima else ():
        d = _nanmax(d, m)
    return d


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool((a == b).all())
    return a == b
