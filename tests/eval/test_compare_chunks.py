"""The chunked comparison reaches the verdict the whole-tensor one did, field for field: ok, rule,
max_abs_err, torch_err and the message naming the element furthest outside its bound, on random
cases that pass by tolerance, pass by the error multiple, fail, carry NaN/Inf, are integer or
near zero, and on the L2 rule whose norm must be summed over every chunk."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
import torch
from compare_oracle import changes_across as old_changes_across
from compare_oracle import compare as old_compare
from kernelskill.eval.judge.chunks import pieces, take
from kernelskill.eval.judge.compare import ChangeTracker, Verdict, changes_across, comparable, compare

WHOLE = 1 << 40  # one chunk: the whole tensor at once
CHUNKS = (1, 3, 7)
SHAPES = [(), (0,), (1,), (7,), (3, 5), (4, 3, 6), (2, 1, 9), (5, 0, 3), (6, 6)]
FLOATS = [torch.float32] * 4 + [torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int32, torch.int64, torch.bool]


def same(a: Verdict, b: Verdict) -> bool:
    def eq(x: float, y: float) -> bool:
        return x == y or (math.isnan(x) and math.isnan(y))
    return (a.ok, a.rule, a.reason) == (b.ok, b.rule, b.reason) and eq(a.max_abs_err, b.max_abs_err) \
        and eq(a.torch_err, b.torch_err) and (not a.ok or a.masked == b.masked)


def strided(t: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The same values as `t` with other strides (transposed storage), half of the time."""
    if t.dim() < 2 or torch.rand((), generator=g) < 0.5:
        return t
    return t.t().contiguous().t() if t.dim() == 2 else t.permute(2, 1, 0).contiguous().permute(2, 1, 0)


def pick(g: torch.Generator, options: list[Any]) -> Any:
    return options[int(torch.randint(len(options), (), generator=g))]


def spots(shape: tuple[int, ...], g: torch.Generator, p: float) -> torch.Tensor:
    return torch.rand(shape, generator=g) < p


def float_case(g: torch.Generator) -> tuple[Any, Any, Any, float | None, float | None]:
    shape, dtype = pick(g, SHAPES), pick(g, FLOATS)
    r64 = torch.randn(shape, generator=g, dtype=torch.float64) * pick(g, [1e-3, 1.0, 30.0])
    r64 = torch.where(spots(shape, g, 0.3), r64 * 1e-7, r64)  # near-zero outputs
    own = pick(g, [0.0, 1e-7, 1e-5, 1e-3])  # PyTorch's own error
    r32 = (r64 + own * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    kind = pick(g, ["noise", "noise", "multiple", "nan_out", "nan_ref", "inf_ref", "inf_ref32"])
    if kind == "multiple":  # around the error-multiple rule: k times PyTorch's own error
        k = pick(g, [0.5, 2.0, 4.9, 5.5, 20.0])
        out = (r64 + k * (r32.double() - r64)).to(dtype)
    else:
        err = pick(g, [0.0, 1e-8, 1e-5, 1e-4, 3e-4, 1e-2, 1.0])
        out = (r64 + err * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    if kind == "nan_out":
        out = torch.where(spots(shape, g, 0.2), pick(g, [math.nan, math.inf]), out)
    if kind in ("nan_ref", "inf_ref"):
        bad = spots(shape, g, 0.2)
        r64 = torch.where(bad, math.nan if kind == "nan_ref" else -math.inf, r64)
        r32 = torch.where(bad, r64.to(dtype), r32)
        reproduce = torch.where(spots(shape, g, 0.9), r64.to(dtype), out)
        out = torch.where(bad, reproduce, out)
    if kind == "inf_ref32":  # PyTorch's fp32 result overflows where float64 does not
        r32 = torch.where(spots(shape, g, 0.2), math.inf, r32)
    atol, rtol = pick(g, [(None, None), (None, None), (1e-6, 0.0), (1e-3, None), (0.0, 1e-3)])
    return strided(out, g), strided(r64, g), r32, atol, rtol


def int_case(g: torch.Generator) -> tuple[Any, Any, Any, None, None]:
    shape, dtype = pick(g, SHAPES), pick(g, INTS)
    r64 = torch.randint(0, 2 if dtype == torch.bool else 50, shape, generator=g).to(dtype)
    flip_ref, flip_out = spots(shape, g, pick(g, [0.0, 0.1])), spots(shape, g, pick(g, [0.0, 0.1, 0.4]))
    r32 = torch.where(flip_ref, ~r64 if dtype == torch.bool else r64 + 1, r64)
    out = torch.where(flip_out, ~r64 if dtype == torch.bool else r64 - 1, r64)
    return strided(out, g), r64, r32, None, None


def outcome(v: Verdict) -> str:
    if v.ok:
        return "masked" if v.masked else str(v.rule)
    return "nan" if "NaN/Inf" in v.reason else "nonfinite" if "non-finite" in v.reason else \
        "differ" if "differ" in v.reason else "error"


def test_chunked_verdict_equals_one_chunk_and_the_old_comparison() -> None:
    g = torch.Generator().manual_seed(20)
    seen: Counter[str] = Counter()
    for i in range(240):
        case = int_case(g) if i % 5 == 4 else float_case(g)
        if i % 7 == 0:  # a structure of two leaves: the verdict covers both
            extra = float_case(g)
            case = tuple((a, b) for a, b in zip(case[:3], extra[:3], strict=True)) + case[3:]
        out, r64, r32, atol, rtol = case
        skip = i % 3 == 1  # a perturbed trial's comparison: non-finite reference elements left out
        want = old_compare(out, r64, r32, atol, rtol, skip)
        one = compare(out, r64, r32, atol, rtol, chunk=WHOLE, skip_nonfinite=skip)
        assert same(one, want), (i, one, want)
        for c in CHUNKS:
            v = compare(out, r64, r32, atol, rtol, chunk=c, skip_nonfinite=skip)
            assert same(v, want), (i, c, v, want)
        seen[outcome(want)] += 1
    # Every kind of verdict was exercised, so the equality above covers each branch.
    for kind in ("tolerance", "fp32-error-multiple", "nan", "nonfinite", "error", "differ", "masked"):
        assert seen[kind] >= 3, seen


def test_the_l2_rule_sums_over_every_chunk() -> None:
    # PyTorch's own error: 1.0 at one element. The candidate is 2.0 off at n elements, each its own
    # chunk: max 2 <= 5 x 1 always; L2 = 2 sqrt(n) is within 5 x 1 for n = 5 and not for n = 7.
    # A per-chunk norm (or the largest one) would pass n = 7.
    r64 = torch.linspace(-1, 1, 40, dtype=torch.float64)
    own = torch.zeros(40, dtype=torch.float64)
    own[3] = 1.0
    r32 = (r64 + own).float()
    for n, ok in ((5, True), (7, False)):
        off = torch.zeros(40, dtype=torch.float64)
        off[torch.arange(n) * 5 + 1] = 2.0
        out = (r64 + off).float()
        want = old_compare(out, r64, r32, 1e-6, 0.0)
        assert want.ok is ok and (not ok or want.rule == "fp32-error-multiple"), want
        for c in (1, 2, 5, 40):
            assert same(compare(out, r64, r32, 1e-6, 0.0, chunk=c), want), (n, c)


def test_the_message_names_the_element_furthest_outside_its_bound_in_a_late_chunk() -> None:
    r64 = torch.full((4, 6), 100.0, dtype=torch.float64)
    r64[3, 5] = 0.0  # near zero: a small error there is the furthest outside its bound
    out = r64.float().clone()
    out[0, 0] += 0.5
    out[3, 5] = 3e-2  # 300x its bound; [0, 0] is 0.5 off, 50x its bound
    out[2, 1] += 0.5  # ties with [0, 0]: the first one in row-major order is named
    for c in (1, 4, 5, 24):
        v = compare(out, r64, r64.float(), chunk=c)
        assert not v.ok and "at (3, 5)" in v.reason and v.max_abs_err == 0.5, (c, v)
    out[3, 5] = 0.0
    for c in (1, 4, 5, 24):
        v = compare(out, r64, r64.float(), chunk=c)
        assert "at (0, 0)" in v.reason, (c, v)


def test_nan_count_is_the_whole_outputs() -> None:
    r64 = torch.zeros(10, dtype=torch.float64)
    out = torch.zeros(10)
    out[[0, 4, 9]] = math.nan
    for c in (1, 3, 10):
        v = compare(out, r64, r64.float(), chunk=c)
        assert v.reason == "out: 3 NaN/Inf values where the reference is finite", (c, v)


def test_changes_across_is_unchanged_and_forgets_the_first_output() -> None:
    g = torch.Generator().manual_seed(3)
    for _ in range(60):
        shape = pick(g, SHAPES)
        base = torch.randn(shape, generator=g)
        step = pick(g, [0.0, 1e-9, 1e-3])
        outs = [(base + step * k * torch.randn(shape, generator=g), torch.tensor(1)) for k in range(3)]
        if torch.rand((), generator=g) < 0.3:
            outs[2] = (outs[2][0], torch.tensor(2))  # an integer leaf that changes
        for c in (1, 4, WHOLE):
            assert changes_across(outs, chunk=c) == old_changes_across(outs)
    track = ChangeTracker(chunk=2)
    track.add(torch.ones(5))
    assert track.first is not None and track.varies()  # one trial says nothing yet
    track.add(torch.ones(5))
    assert not track.varies() and track.first is not None
    track.add(torch.zeros(5))
    assert track.varies() and track.first is None  # nothing kept once the answer is known


def test_large_outputs_are_tracked_by_an_evenly_spread_sample() -> None:
    base = torch.randn(40, 25).t()  # non-contiguous: sampled by index, never copied whole
    track = ChangeTracker(sample=100)
    track.add(base)
    assert track.first is not None and track.first[0][0].numel() == 100
    track.add(base.clone())
    assert not track.varies()
    moved = base.clone()
    moved[0, 0] += 1.0  # element 0 is always in the sample
    track.add(moved)
    assert track.varies()
    # Small outputs are kept whole, as before: a change anywhere counts.
    small = ChangeTracker(sample=100)
    small.add(torch.zeros(10))
    one = torch.zeros(10)
    one[7] = 1.0
    small.add(one)
    assert small.varies()


@pytest.mark.parametrize("shape", [(5, 2, 3), (2, 3, 5), (1, 40), (40, 1), (3, 0), ()])
def test_pieces_cover_any_layout_in_row_major_order(shape: tuple[int, ...]) -> None:
    base = torch.arange(math.prod(shape)).reshape(shape)
    layouts = [base] + ([base.permute(*reversed(range(base.dim()))).contiguous()
                         .permute(*reversed(range(base.dim())))] if base.dim() > 1 else [])
    for t in layouts:
        for c in (1, 2, 4, 7, 30, 1000):
            ps = list(pieces(t.shape, c))
            got = torch.cat([take(t, p) for p in ps]) if ps else torch.empty(0, dtype=t.dtype)
            assert torch.equal(got, base.reshape(-1)), (shape, c)
            assert all(0 < take(t, p).numel() <= c for p in ps)
            assert all(take(t, p)[0] == p.offset for p in ps)
    with pytest.raises(ValueError, match="at least 1"):
        list(pieces((3,), 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_a_leaf_is_read_back_once_whatever_its_number_of_chunks(monkeypatch: pytest.MonkeyPatch,
                                                                dtype: torch.dtype) -> None:
    # On a GPU every read of a tensor into Python waits for the device; in the judge each wait
    # also hands the GIL over to its background imports (~5 ms). The statistics of all chunks
    # are read in one go: the count does not grow with the chunks.
    reads = Counter()
    for name in ("__float__", "__int__", "__bool__", "item", "tolist"):
        real = getattr(torch.Tensor, name)

        def counted(t: torch.Tensor, *a: Any, _n: str = name, _r: Any = real) -> Any:
            reads.update([_n])
            return _r(t, *a)
        monkeypatch.setattr(torch.Tensor, name, counted)
    r64 = torch.linspace(-3, 3, 600, dtype=torch.float64).reshape(20, 30)
    r32, out = r64.to(dtype), (r64 * (1 + 1e-7)).to(dtype)
    for chunk in (30, 7):
        for skip in (False, True):
            reads.clear()
            assert compare(out, r64, r32, chunk=chunk, skip_nonfinite=skip).ok
            assert sum(reads.values()) == 1, (chunk, reads)
    reads.clear()
    n = 600 if dtype.is_floating_point else 0  # integer leaves have nothing to skip
    assert comparable(r64, r32, chunk=7) == (n, n) and sum(reads.values()) <= 1, reads
