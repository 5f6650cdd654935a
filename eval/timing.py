"""Timing protocol: L2 flushed and device idle before every run, inputs rotated, median of many.

Each run: write a buffer larger than L2 (so no operand is cache-warm), synchronize (so the CPU
cost of launching counts: a launch-bound forward is slow for its user too), record a CUDA event,
call, record, synchronize. A host wall clock brackets the same run; where the wall time
exceeds the event time by more than the synchronize overhead, work escaped the timed stream.
On the CPU the wall clock is all there is, and results are labelled CPU timings.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# Rationale: H200 L2 is 60 MB (50 MB on H100); 256 MB covers every current part with margin.
FLUSH_BYTES = 256 << 20


@dataclass
class TimingStats:
    median_ms: float
    mean_ms: float
    min_ms: float
    runs: int
    wall_ms: float  # median wall-clock per run (synchronize included), minus measured sync overhead
    last_output: Any = None
    spread: float = 0.0
    """Run-to-run noise: interquartile range of the timed runs over their median (0.05 = 5 %)."""


class Timer:
    """Times callables on one device with one flush buffer, one protocol for every model."""

    def __init__(self, device: str, budget_s: float = 2.0, min_runs: int = 10, max_runs: int = 200):
        self.device = device
        self.budget_s = budget_s
        self.min_runs, self.max_runs = min_runs, max_runs
        self.cuda = device.startswith("cuda")
        self._flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device) if self.cuda else None
        self.sync_overhead_ms = self._sync_overhead() if self.cuda else 0.0

    def _flush_l2(self) -> None:
        if self._flush is not None:
            self._flush.zero_()

    def _sync_overhead(self) -> float:
        samples = []
        for _ in range(20):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(samples)

    def _one(self, fn: Callable[..., Any], args: Sequence[Any]) -> tuple[float, float, Any]:
        if not self.cuda:
            t0 = time.perf_counter()
            out = fn(*args)
            ms = (time.perf_counter() - t0) * 1e3
            return ms, ms, out
        self._flush_l2()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        out = fn(*args)
        end.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
        return start.elapsed_time(end), wall, out

    def time(self, fn: Callable[..., Any], input_sets: Sequence[Sequence[Any]], warmup: int = 3,
             keep_output_of: int | None = None) -> TimingStats:
        """Median over runs cycling through `input_sets`; returns the output of the last run on set
        `keep_output_of` for spot-checking."""
        n_sets = len(input_sets)
        with torch.no_grad():
            for i in range(warmup):
                self._one(fn, input_sets[i % n_sets])
            probe = [self._one(fn, input_sets[i % n_sets])[0] for i in range(2)]
            per_run = max(statistics.median(probe), 1e-3) + (0.05 if self.cuda else 0.0)
            runs = int(min(self.max_runs, max(self.min_runs, self.budget_s * 1e3 / per_run)))
            runs = max(runs, n_sets)  # every input set is timed (and the spot-checked one kept)
            events, walls, kept = [], [], None
            for i in range(runs):
                ms, wall, out = self._one(fn, input_sets[i % n_sets])
                events.append(ms)
                walls.append(wall)
                if keep_output_of is not None and i % n_sets == keep_output_of:
                    kept = out
                del out
        wall = max(statistics.median(walls) - self.sync_overhead_ms, 0.0)
        median = statistics.median(events)
        return TimingStats(median, statistics.fmean(events), min(events), runs, wall, kept,
                           relative_spread(events, median))


def relative_spread(samples: Sequence[float], median: float) -> float:
    """Interquartile range over the median: how far apart two timings of the same code fall."""
    if len(samples) < 2 or median <= 0:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / median


def hidden_work(stats: TimingStats, device: str) -> bool:
    """True when the wall clock shows work the stream events did not see (side streams, host
    threads). Rationale: an honest call's wall time is its event time plus ~tens of µs of
    Python around the events; 1.5x + 0.2 ms leaves margin for launch jitter."""
    return device.startswith("cuda") and stats.wall_ms > 1.5 * stats.median_ms + 0.2
