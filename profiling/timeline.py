"""The kernel timeline of one forward: GPU activities from a Kineto trace, grouped per kernel.

Pure functions over typed records (standard library only), tested on CPU with timelines captured
on the H200 (tests/fixtures/profiles/*.torch.json).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .ncu import NcuKernel, base_name

# Rationale: the dominating kernels are those covering 80% of the GPU time, at most 3 names:
# on the fixtures the top 1-3 names hold 88-100% of the forward.
NCU_SHARE, NCU_NAMES = 0.8, 3


@dataclass
class Launch:
    """One GPU activity of the profiled forward (Kineto trace: geometry is None if not reported)."""

    name: str
    start_us: float
    dur_us: float
    kind: str = "kernel"
    """'kernel', 'memset' or 'memcpy'."""
    grid: int | None = None
    block: int | None = None
    registers: int | None = None
    blocks_per_sm: float | None = None
    occupancy_pct: float | None = None
    """Kineto's estimate from the launch geometry, not a measurement."""


@dataclass
class KernelTime:
    """One kernel (by name) in the forward; geometry and ncu metrics are of its longest launch."""

    name: str
    time_us: float
    launches: int
    share: float
    kind: str = "kernel"
    grid: int | None = None
    block: int | None = None
    registers: int | None = None
    blocks_per_sm: float | None = None
    occupancy_pct: float | None = None
    ncu: NcuKernel | None = None


@dataclass
class Timeline:
    kernels: list[KernelTime]
    """By total time, longest first."""
    launches: int
    busy_us: float
    """GPU time of all launches; the forward's wall time minus this is idle GPU."""
    span_us: float
    """First launch start to last launch end."""
    gap_us: float | None
    """Mean idle time between consecutive launches (None for a single launch)."""


def launches_from_trace(trace: dict[str, Any]) -> list[Launch]:
    """GPU activities from a Kineto chrome trace (`prof.export_chrome_trace`), in start order."""
    kinds = {"kernel": "kernel", "gpu_memset": "memset", "gpu_memcpy": "memcpy"}
    out = []
    for ev in trace.get("traceEvents", []):
        kind = kinds.get(str(ev.get("cat", "")).lower())
        if kind is None or ev.get("ph") != "X":
            continue
        a = ev.get("args") or {}
        out.append(Launch(name=str(ev.get("name", "?")), start_us=float(ev["ts"]),
                          dur_us=float(ev.get("dur", 0)), kind=kind, grid=_prod(a.get("grid")),
                          block=_prod(a.get("block")),
                          registers=a.get("registers per thread"), blocks_per_sm=a.get("blocks per SM"),
                          occupancy_pct=a.get("est. achieved occupancy %")))
    return sorted(out, key=lambda x: x.start_us)


def _prod(dims: Any) -> int | None:
    if not isinstance(dims, list) or not dims:
        return None
    n = 1
    for d in dims:
        n *= int(d)
    return n


def timeline_of(launches: list[Launch]) -> Timeline:
    """Per-kernel time, share and launch count, plus busy time, span and idle gaps."""
    launches = sorted(launches, key=lambda x: x.start_us)
    busy = sum(x.dur_us for x in launches)
    first = launches[0].start_us if launches else 0.0
    span = max((x.start_us + x.dur_us for x in launches), default=first) - first
    gaps = [max(0.0, b.start_us - (a.start_us + a.dur_us))
            for a, b in zip(launches, launches[1:], strict=False)]
    by_name: dict[str, KernelTime] = {}
    longest: dict[str, float] = {}
    for x in launches:
        k = by_name.setdefault(x.name, KernelTime(x.name, time_us=0.0, launches=0, share=0.0, kind=x.kind))
        k.time_us += x.dur_us
        k.launches += 1
        if x.dur_us >= longest.get(x.name, -1.0):
            longest[x.name] = x.dur_us
            k.grid, k.block, k.registers = x.grid, x.block, x.registers
            k.blocks_per_sm, k.occupancy_pct = x.blocks_per_sm, x.occupancy_pct
    for k in by_name.values():
        k.share = k.time_us / busy if busy else 0.0
    kernels = sorted(by_name.values(), key=lambda k: -k.time_us)
    return Timeline(kernels=kernels, launches=len(launches), busy_us=busy, span_us=span,
                    gap_us=sum(gaps) / len(gaps) if gaps else None)


def ncu_selection(launches: list[Launch], tl: Timeline, max_launches: int) -> tuple[str | None, int]:
    """(kernel-name regex or None for every kernel, launch count) for ncu: all launches when few,
    else the names covering NCU_SHARE of the time (at most NCU_NAMES)."""
    kernels = [x for x in launches if x.kind == "kernel"]
    if len(kernels) <= max_launches:
        return None, max(1, len(kernels))
    names, covered = [], 0.0
    for k in (k for k in tl.kernels if k.kind == "kernel"):
        if covered >= NCU_SHARE or len(names) == NCU_NAMES:
            break
        if (b := base_name(k.name)) not in names:
            names.append(b)
        covered += k.share
    count = sum(1 for x in kernels if base_name(x.name) in names)
    return "(^|:)(" + "|".join(re.escape(b) for b in names) + ")$", max(1, min(max_launches, count))


def attach_ncu(tl: Timeline, launches: list[Launch], rows: list[NcuKernel], regex: str | None) -> int:
    """Pair ncu's rows (launch order) with the timeline's launches by base name; each kernel gets
    the metrics of its longest profiled launch. Returns the number of kernels that got metrics.

    The two forwards need not launch exactly the same kernels: the timeline's forward may replay a
    CUDA graph (with its input copies) where ncu profiled the same kernels launched without replay.
    A launch ncu did not profile is passed over, and a row with no launch of its name ahead is
    dropped without losing the rows after it."""
    pattern = re.compile(regex) if regex else None
    pool = [x for x in launches
            if x.kind == "kernel" and (pattern is None or pattern.search(base_name(x.name)))]
    best: dict[str, tuple[float, NcuKernel]] = {}
    j = 0
    for row in rows:
        want = base_name(row.name)
        at = next((i for i in range(j, len(pool)) if base_name(pool[i].name) == want), None)
        if at is None:
            continue
        x = pool[at]
        if x.dur_us >= best.get(x.name, (-1.0, row))[0]:
            best[x.name] = (x.dur_us, row)
        j = at + 1
    for k in tl.kernels:
        if k.name in best:
            k.ncu = best[k.name][1]
    return len(best)
