"""Timing the candidate from the judge: one command per run, checks the candidate cannot predict.

The candidate process times each forward itself (CUDA events must be recorded on the candidate's
own stream; on the CPU its perf_counter), but the judge decides everything else:
- every run is the same "run set k" command on freshly drawn inputs (a secret seed per run, none
  used twice) written into one of a few rotating shared sets, so warm-up, probe and timed runs,
  and checked and unchecked ones, look the same to the candidate: same command, same poisoning,
  same copies (candidate.main._forward);
- the outputs of every run are copied by the judge, and a uniform sample of them, drawn as the runs
  go (reservoir sampling: whether a run is checked is only settled after the last one), is
  compared with the reference on the same inputs;
- time is the judge's: a null forward (the same protocol around a forward that does nothing) every
  few runs measures what a run costs besides the forward, by the judge's clock. On the CPU the
  runtime is the judge's wall clock less that; on the GPU the candidate process's CUDA events,
  which must agree with it (timing.clock_mismatch). Work deferred into the copy of the output
  counts (`run_costs`), and the older bounds stay behind (the candidate process's idle clock,
  timing.escapes_events; the uncalibrated wall clock, timing.implausibly_fast).
"""
from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .. import harness as H
from ..candidate.poison import fill_poison, poison_cuda_allocator
from ..timing.protocol import (
    CPU_RESOLUTION_MS,
    Timer,
    clock_mismatch,
    escapes_events,
    fill_cap,
    implausibly_fast,
    relative_spread,
    touch_pages,
)
from ..timing.roofline import tensor_bytes
from ..types import Rejected
from .compare import compare

if TYPE_CHECKING:
    from .remote import Forward, Remote
    from .state import JudgeState

# Rationale: 8 checked runs catch a candidate that is wrong on a share f of its runs with
# probability 1 - (1 - f)^8 (> 99.6% when f >= 1/2, the least that moves a median); on the CPU a
# run count is at most ~10, so 16 keeps every run. Kept outputs are capped at 2 GiB in total.
CHECKED_CUDA, CHECKED_CPU, KEEP_BYTES = 8, 16, 2 << 30
# Rationale: a null forward after every run on the CPU (at most ~10 runs), after every 4th of the
# GPU's 200: a median of 50 paired differences is steady to a few microseconds, and the null runs
# add a quarter to the protocol's share of the timing stage rather than doubling it.
MAX_NULL = 50


@dataclass
class CandidateTiming:
    median_ms: float
    """The runtime: on the GPU the candidate process's events (cross-checked by the judge's clock),
    on the CPU the judge's own clock less the evaluator's poison fills; both plus any copy cost
    beyond an honest copy (`run_costs`)."""
    mean_ms: float
    min_ms: float
    runs: int
    wall_ms: float
    """The judge's median wall clock per call less the protocol's cost: the median null forward
    (judged runs, `overhead_ms`); unjudged runs (the baselines) have none taken off."""
    idle_ms: float
    """The candidate process's median host time from its start event to an idle device."""
    overhead_ms: float
    """The protocol's cost per call the judge measured: the median null forward (judged runs)."""
    checked: int
    spread: float = 0.0
    """Run-to-run noise of the runtime: interquartile range over the median (eval/timing/protocol.py)."""
    reported_ms: float = 0.0
    """The candidate process's own median forward time (events or host clock), fills included."""
    copy_ms: float = 0.0
    """The candidate process's median time to describe and copy the output into the slots."""


class _Reservoir:
    """A uniform sample of at most `k` items from a stream whose length is not known in advance."""

    def __init__(self, k: int):
        self.k, self.seen, self.items = k, 0, []
        self.rng = secrets.SystemRandom()

    def offer(self, item: Any) -> None:
        self.seen += 1
        if len(self.items) < self.k:
            self.items.append(item)
            return
        j = self.rng.randrange(self.seen)
        if j < self.k:
            self.items[j] = item


def time_remote(w: JudgeState, remote: Remote, timer: Timer, n_sets: int, warmup: int = 3,
                judged: bool = True) -> CandidateTiming:
    """Time the model of `remote`'s process, one "run" command per run. `judged`: the candidate,
    whose outputs are sampled and checked and whose times are checked against the judge's clock
    (a null forward after every few runs measures the protocol); the baseline process
    (eval/judge/baselines.py: the reference itself) is timed by the same runs, unjudged."""
    cuda = w.device == "cuda"
    for k in range(n_sets):
        if k not in remote.sets:
            remote.add_set(k, H.make_inputs(w.problem, H.secret_seed(), w.device))
    out_bytes = max(sum(s.numel() * s.element_size() for s in remote.slots), 1)
    kept = _Reservoir(max(1, min(CHECKED_CUDA if cuda else CHECKED_CPU, KEEP_BYTES // out_bytes)))
    calls, seeds = [0], set()

    def one() -> Forward:
        # Every run, warm-ups and probes included, on values drawn afresh under a seed no run used.
        i, seed = calls[0], H.secret_seed()
        while seed in seeds:
            seed = H.secret_seed()
        seeds.add(seed)
        calls[0] += 1
        fwd = remote.forward(i % n_sets, H.make_inputs(w.problem, seed, w.device), "timed", "runtime_error")
        fwd.check_contract("timing", f"timed run {i}")
        if not judged:
            # The baselines' outputs are never checked. Kept, the judge held a copy per run: 28 of
            # 2 GiB for level1/11_gelu, which filled an H100 and sent its baselines back to the
            # judge (H100, 2026-12-06, the fallback's log line: eval/judge/memory.largest_live).
            fwd.out = None
            return fwd
        if fwd.mutated and not w.ref_mutates:
            raise Rejected("timing", f"timed run {i}: the candidate modified its inputs in place; the "
                           "reference does not", "input_mutation")
        kept.offer((i, seed, fwd.out))
        fwd.out = None
        return fwd

    timed: list[Forward] = []
    nulls: list[Forward] = []
    with torch.no_grad():
        for _ in range(warmup):
            one()
        probe = [one().wall_ms for _ in range(2)]
        per_run = max(statistics.median(probe), 1e-3)
        runs = max(n_sets, int(min(timer.max_runs, max(timer.min_runs, timer.budget_s * 1e3 / per_run))))
        step = -(-runs // MAX_NULL)
        for i in range(runs):
            timed.append(one())
            if judged and i % step == 0:  # spread over the runs: the same state of the machine
                nulls.append(remote.null_forward(i % n_sets))
    if judged:
        _check_outputs(w, kept.items)
    # Layer 1 fills no CUDA tensor (the allocator is poisoned before the run instead): fills a
    # CUDA forward reports are not the evaluator's, and none comes out of its time.
    cap = 0.0 if cuda else fill_cap(_judge_fill_ms(remote))
    stats = _stats(timed, nulls, cap, cuda, len(kept.items) if judged else 0)
    if judged:
        _check_clocks(w, timer, remote, timed, nulls, stats, cuda)
    return stats


def _stats(timed: list[Forward], nulls: list[Forward], cap: float, cuda: bool,
           checked: int) -> CandidateTiming:
    null_copy = statistics.median([n.copy_ms for n in nulls]) if nulls else None
    costs = run_costs(timed, cap, null_copy)
    reported = statistics.median([f.ms for f in timed])
    walls = [f.wall_ms for f in timed]
    overhead = statistics.median([n.wall_ms for n in nulls]) if nulls else 0.0
    # Medians of each, not of paired differences: on a loaded CPU a null forward now and then
    # waits milliseconds for a core, and a difference carries that spike where a median drops it.
    wall = statistics.median(walls) - overhead
    if not cuda and nulls:
        # On the CPU the runtime is the judge's own clock: there are no device events, and the
        # candidate process's host clock is a number from its side (a cross-check, _check_clocks).
        fill = min(statistics.median([f.fill_ms for f in timed]), cap)
        costs = [max(t - overhead - fill, CPU_RESOLUTION_MS) for t in walls]
    median = statistics.median(costs)
    return CandidateTiming(median, statistics.fmean(costs), min(costs), len(timed), max(wall, 0.0),
                           statistics.median([f.idle_ms for f in timed]), overhead, checked,
                           relative_spread(costs, median), reported,
                           statistics.median([f.copy_ms for f in timed]))


def run_costs(timed: list[Forward], fill_cap_ms: float, null_copy_ms: float | None) -> list[float]:
    """Each run's cost as the candidate process measured it: its forward, less the evaluator's NaN
    fills of its empty* tensors (at most `fill_cap_ms`: fills beyond what the judge's own fill of
    the output costs are the candidate's), plus what describing and copying its output cost beyond
    a null forward's copy of the same bytes: work deferred into the copy (a lazy view, a hook) is
    the candidate's work."""
    return [max(f.ms - min(f.fill_ms, fill_cap_ms), 0.0)
            + (max(f.copy_ms - null_copy_ms, 0.0) if null_copy_ms is not None else 0.0) for f in timed]


def _check_clocks(w: JudgeState, timer: Timer, remote: Remote, timed: list[Forward],
                  nulls: list[Forward], stats: CandidateTiming, cuda: bool) -> None:
    """The candidate process's times against the clocks: `hidden_work` where its own idle clock saw
    far more than its events; `clock_mismatch` where the judge's clock, calibrated by null forwards,
    saw far more than its events and copy; then the older, uncalibrated bound on the judge's wall
    clock (`hidden_work`), a backstop should the null forwards themselves have been slowed."""
    events = statistics.median([f.ms + f.copy_ms for f in timed])
    if escapes_events(events, stats.idle_ms, cuda):
        raise Rejected("timing", f"the device stayed busy {stats.idle_ms:.3f} ms per call from the "
                       f"candidate's start event where its events saw {events:.3f} ms: work "
                       "escapes the timed region (another stream, or left running past the end "
                       "event)", "hidden_work")
    # What the judge's clock beyond the protocol (a run's wall time less a null forward's) should
    # see by the candidate process's own account: its forward and copy, less the null forward's.
    claimed = max(events - statistics.median([n.ms + n.copy_ms for n in nulls]), 0.0)
    if clock_mismatch(claimed, stats.wall_ms, cuda):
        raise Rejected("timing", f"the candidate process reported {claimed:.4f} ms per forward where "
                       f"the judge's clock saw {stats.wall_ms:.4f} ms beyond the protocol (a null "
                       f"forward: {stats.overhead_ms:.3f} ms): its clock does not agree with the "
                       "judge's", "clock_mismatch")
    walls = statistics.median([f.wall_ms for f in timed])
    overhead = w.ping_ms + _judge_side_ms(w, timer, remote)
    if implausibly_fast(stats.reported_ms, walls, overhead, w.ping_ms, cuda):
        raise Rejected("timing", f"the judge's wall clock saw {walls:.3f} ms per call ({overhead:.3f} "
                       f"ms of it protocol) where the candidate reported {stats.reported_ms:.3f} ms: "
                       "work escapes the timed region", "hidden_work")


def _check_outputs(w: JudgeState, kept: list[tuple[int, int, Any]]) -> None:
    """Judge the sampled timed runs on their own inputs, regenerated from their seeds."""
    for i, seed, out in sorted(kept, key=lambda item: item[0]):
        ref64, ref32, _, _ = w.reference_outputs(H.make_inputs(w.problem, seed, w.device))
        verdict = compare(out, ref64, ref32, w.opts.atol, w.opts.rtol)
        if not verdict.ok:
            raise Rejected("timing", f"output of timed run {i} is wrong: {verdict.reason}", "timed_output")


def _judge_fill_ms(remote: Remote) -> float:
    """What NaN-filling the output slots costs here on the CPU (timing.fill_cap's yardstick): the
    fills layer 1 makes in an honest candidate's forward are of its output, as large as these slots."""
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for s in remote.slots:
            fill_poison(s)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _judge_side_ms(w: JudgeState, timer: Timer, remote: Any) -> float:
    """What a run costs besides the forward and the ping, measured here where the candidate cannot
    slow it down: the allocator poisoning, the page touch, the L2 flush and the copies into the
    output slots."""
    in_bytes = tensor_bytes(remote.sets[0].items)
    samples = []
    for _ in range(5):
        copies = [s.clone() for s in remote.slots]
        t0 = time.perf_counter()
        if w.device == "cuda":
            poison_cuda_allocator(2 * in_bytes)
            touch_pages(remote.sets[0].items)
            timer.flush_l2()
            torch.cuda.synchronize()
        for s, c in zip(remote.slots, copies, strict=True):
            s.copy_(c)
        if w.device == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)
