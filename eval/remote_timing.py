"""Timing the candidate from the judge: one command per run, checks the candidate cannot predict.

The candidate process times each forward itself (CUDA events must be recorded on the candidate's
own stream; on the CPU its perf_counter), but the judge decides everything else:
- every run is the same "run set k" command on freshly drawn inputs (secret seed per run) written
  into one of a few rotating shared sets, so warm-up, probe and timed runs, and checked and
  unchecked ones, look the same to the candidate: same command, same poisoning, same copies;
- the outputs of every run are copied by the judge, and a uniform sample of them, drawn as the runs
  go (reservoir sampling: whether a run is checked is only settled after the last one), is
  compared with the reference on the same inputs;
- the judge's own wall clock from command to reply bounds the times the candidate reports
  (timing.implausibly_fast): work hidden on another stream, or a patched clock, shows as a wall
  time far above the reported one.
"""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from . import harness as H
from .compare import compare
from .poison import poison_cuda_allocator
from .roofline import tensor_bytes
from .timing import Timer, escapes_events, implausibly_fast, relative_spread, touch_pages
from .types import Rejected

if TYPE_CHECKING:
    from .judge_io import Remote
    from .worker import Worker

# Rationale: 8 checked runs catch a candidate that is wrong on a share f of its runs with
# probability 1 - (1 - f)^8 (> 99.6% when f >= 1/2, the least that moves a median); on the CPU a
# run count is at most ~10, so 16 keeps every run. Kept outputs are capped at 2 GiB in total.
CHECKED_CUDA, CHECKED_CPU, KEEP_BYTES = 8, 16, 2 << 30


@dataclass
class CandidateTiming:
    median_ms: float
    mean_ms: float
    min_ms: float
    runs: int
    wall_ms: float
    """The judge's median wall clock per call, less the measured protocol overhead."""
    idle_ms: float
    """The candidate process's median host time from its start event to an idle device."""
    overhead_ms: float
    checked: int
    spread: float = 0.0
    """Run-to-run noise of the reported times: interquartile range over the median (timing.py)."""


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


def time_remote(w: Worker, remote: Remote, timer: Timer, n_sets: int, warmup: int = 3,
                judged: bool = True) -> CandidateTiming:
    """Time the model of `remote`'s process, one "run" command per run. `judged`: the candidate,
    whose outputs are sampled and checked and whose times are bounded by the judge's clocks; the
    baseline process (eval/baselines.py: the reference itself) is timed by the same runs, unjudged."""
    cuda = w.device == "cuda"
    for k in range(n_sets):
        if k not in remote.sets:
            remote.add_set(k, H.make_inputs(w.problem, H.secret_seed(), w.device))
    out_bytes = max(sum(s.numel() * s.element_size() for s in remote.slots), 1)
    kept = _Reservoir(max(1, min(CHECKED_CUDA if cuda else CHECKED_CPU, KEEP_BYTES // out_bytes)))
    calls = [0]

    def one() -> tuple[float, float, float]:
        i, seed = calls[0], H.secret_seed()
        calls[0] += 1
        inputs = H.make_inputs(w.problem, seed, w.device)
        fwd = remote.forward(i % n_sets, inputs, "timed", "runtime_error")
        fwd.check_contract("timing", f"timed run {i}")
        if not judged:
            return fwd.ms, fwd.wall_ms, fwd.idle_ms
        if fwd.mutated and not w.ref_mutates:
            raise Rejected("timing", f"timed run {i}: the candidate modified its inputs in place; the "
                           "reference does not", "input_mutation")
        kept.offer((i, seed, fwd.out))
        return fwd.ms, fwd.wall_ms, fwd.idle_ms

    with torch.no_grad():
        for _ in range(warmup):
            one()
        probe = [one()[1] for _ in range(2)]
        per_run = max(statistics.median(probe), 1e-3)
        runs = int(min(timer.max_runs, max(timer.min_runs, timer.budget_s * 1e3 / per_run)))
        timed = [one() for _ in range(max(runs, n_sets))]
    events, walls, idles = [t[0] for t in timed], [t[1] for t in timed], [t[2] for t in timed]
    if judged:
        _check_outputs(w, kept.items)
    overhead = (w.ping_ms + _judge_side_ms(w, timer, remote)) if judged else 0.0
    stats = CandidateTiming(statistics.median(events), statistics.fmean(events), min(events),
                            len(timed), max(statistics.median(walls) - overhead, 0.0),
                            statistics.median(idles), overhead, len(kept.items),
                            relative_spread(events, statistics.median(events)))
    if not judged:
        return stats
    if escapes_events(stats.median_ms, stats.idle_ms, cuda):
        raise Rejected("timing", f"the device stayed busy {stats.idle_ms:.3f} ms per call from the "
                       f"candidate's start event where its events saw {stats.median_ms:.3f} ms: work "
                       "escapes the timed region (another stream, or left running past the end "
                       "event)", "hidden_work")
    if implausibly_fast(stats.median_ms, statistics.median(walls), overhead, w.ping_ms, cuda):
        raise Rejected("timing", f"the judge's wall clock saw {statistics.median(walls):.3f} ms per "
                       f"call ({overhead:.3f} ms of it protocol) where the candidate reported "
                       f"{stats.median_ms:.3f} ms: work escapes the timed region", "hidden_work")
    return stats


def _check_outputs(w: Worker, kept: list[tuple[int, int, Any]]) -> None:
    """Judge the sampled timed runs on their own inputs, regenerated from their seeds."""
    for i, seed, out in sorted(kept, key=lambda item: item[0]):
        ref64, ref32, _, _ = w.reference_outputs(H.make_inputs(w.problem, seed, w.device))
        verdict = compare(out, ref64, ref32, w.opts.atol, w.opts.rtol)
        if not verdict.ok:
            raise Rejected("timing", f"output of timed run {i} is wrong: {verdict.reason}", "timed_output")


def _judge_side_ms(w: Worker, timer: Timer, remote: Any) -> float:
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
