"""The comparison as it was before it was chunked (eval/judge/compare.py at e830f1b), the tests' oracle:
the chunked comparison must reach the same verdict, field for field. Rules added since are written
here the plain whole-tensor way: the default absolute tolerance times min(1, the RMS of PyTorch's
finite output), and `skip_nonfinite` (perturbed trials: elements where either reference is
non-finite are left out instead of reproduced)."""

from __future__ import annotations

import math
from typing import Any

import torch
from kernelskill.eval.harness import flatten
from kernelskill.eval.judge.compare import ERROR_MULTIPLE, Verdict, default_tolerance


def compare(out: Any, ref64: Any, ref32: Any, atol: float | None = None,
            rtol: float | None = None, skip_nonfinite: bool = False) -> Verdict:
    """Judge `out` against the float64 reference `ref64`; `ref32` is PyTorch's fp32 result."""
    got, want, base = flatten(out), flatten(ref64), flatten(ref32)
    if len(got) != len(want):
        return Verdict(False, reason=f"output structure differs: {len(got)} leaves, expected {len(want)}")
    rules: set[str] = set()
    worst = Verdict(True)
    for (path, o), (_, r64), (_, r32) in zip(got, want, base, strict=True):
        v = _compare_leaf(path, o, r64, r32, atol, rtol, skip_nonfinite)
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
                  rtol: float | None, skip: bool) -> Verdict:
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
    o, r64, r32 = o.detach(), r64.detach().to(o.device), r32.detach().to(o.device)
    if not (o.is_floating_point() or o.is_complex()):
        mismatches = int((o != r64.to(o.dtype)).sum())
        allowed = 2 * int((r32 != r64.to(r32.dtype)).sum())
        if mismatches > allowed:
            return Verdict(False, reason=f"{path}: {mismatches} of {o.numel()} elements differ")
        return Verdict(True, "tolerance" if mismatches == 0 else "fp32-error-multiple")
    o64, r64 = o.double(), r64.double()
    finite = torch.isfinite(r64) & (torch.isfinite(r32) if skip else True)
    masked = int((~finite).sum()) if skip else 0
    bad = finite & ~torch.isfinite(o64)
    if bool(bad.any()):
        n = int(bad.sum())
        return Verdict(False, reason=f"{path}: {n} NaN/Inf values where the reference is finite")
    nonfinite_mismatch = ~finite & ~((o64 == r64) | (torch.isnan(o64) & torch.isnan(r64)))
    if not skip and bool(nonfinite_mismatch.any()):
        return Verdict(False, reason=f"{path}: non-finite reference values not reproduced")
    tol = default_tolerance(o.dtype)
    a0 = tol if atol is None else atol
    r = a0 if rtol is None else rtol
    own = r32.double()[torch.isfinite(r32)]
    rms = float(own.square().mean().sqrt()) if own.numel() else 0.0
    a = a0 * min(1.0, rms) if atol is None else a0
    diff = torch.where(finite, (o64 - r64).abs(), torch.zeros_like(r64))
    max_err = float(diff.max()) if diff.numel() else 0.0
    torch_diff = torch.where(finite, (r32.double() - r64).abs(), torch.zeros_like(r64))
    torch_err = float(torch_diff.max()) if torch_diff.numel() else 0.0
    bound = a + r * r64.abs().where(finite, torch.zeros_like(r64))
    if bool((diff <= bound).all()):
        return Verdict(True, "tolerance", max_abs_err=max_err, torch_err=torch_err, masked=masked)
    l2 = float(diff.norm())
    torch_l2 = float(torch_diff.norm())
    if torch_err > 0 and max_err <= ERROR_MULTIPLE * torch_err and l2 <= ERROR_MULTIPLE * torch_l2:
        return Verdict(True, "fp32-error-multiple", max_abs_err=max_err, torch_err=torch_err,
                       masked=masked)
    # The element furthest outside its own bound: near-zero outputs fail at a smaller error
    # than the largest one, and the message should point at the one that failed.
    scaled = f" ({a0:g} x the output's RMS {a / a0:.3g})" if a < a0 else ""
    where = int((diff / bound.clamp_min(1e-30)).argmax()) if diff.numel() else 0
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(where), diff.shape)) if diff.dim() else ()
    return Verdict(False, reason=(f"{path}: error {float(diff.flatten()[where]):.3g} at {idx} (got "
                                  f"{float(o64.flatten()[where]):.6g}, expected "
                                  f"{float(r64.flatten()[where]):.6g}); tolerance {a:.3g}{scaled}+{r:g}"
                                  f"*|ref|, max error {max_err:.3g}, PyTorch's own {torch_err:.3g}"),
                   max_abs_err=max_err, torch_err=torch_err, masked=masked)


def changes_across(outputs: list[Any]) -> bool:
    """False when every trial's reference output is (near) identical: a degenerate problem."""
    leaves = [flatten(o) for o in outputs]
    if len(leaves) < 2:
        return True
    for i in range(len(leaves[0])):
        first = leaves[0][i][1]
        if not isinstance(first, torch.Tensor) or not first.is_floating_point():
            vals = [lv[i][1] for lv in leaves]
            if any(not _same(v, vals[0]) for v in vals[1:]):
                return True
            continue
        scale = float(first.double().abs().max()) if first.numel() else 0.0
        for other in leaves[1:]:
            d = float((other[i][1].double() - first.double()).abs().max()) if first.numel() else 0.0
            if d > 1e-6 * max(scale, 1e-12):
                return True
    return False


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool((a == b).all())
    return a == b
