"""The timing stage: candidate, eager and torch.compile under one protocol, plus speed of light.

The candidate is timed in its own process (remote_timing); eager and torch.compile here, in the
judge, on the judge's own models and input sets, under the same precision flags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from . import harness as H
from . import precision as P
from . import roofline
from .remote_timing import time_candidate
from .timing import Timer, TimingStats
from .types import Rejected

if TYPE_CHECKING:
    from .worker import Worker

# Rationale: three rotating input sets defeat caching by pointer; fewer when the inputs are huge,
# so the sets never crowd out the model itself. Every run also gets fresh values (remote_timing).
MAX_SETS, SET_BYTES_BUDGET = 3, 12 << 30


def _input_sets(w: Worker) -> list[list[Any]]:
    """The judge's own input sets for the baselines, as many as the candidate rotates through."""
    first = H.make_inputs(w.problem, H.secret_seed(), w.device)
    per_set = roofline.tensor_bytes(first)
    n = max(2, min(MAX_SETS, SET_BYTES_BUDGET // max(per_set, 1)))
    return [first] + [H.make_inputs(w.problem, H.secret_seed(), w.device) for _ in range(1, n)]


def run_timing(w: Worker) -> None:
    r, cuda = w.result, w.device == "cuda"
    timer = Timer(w.device, budget_s=w.opts.timing_budget_s if cuda else 0.5,
                  min_runs=10 if cuda else 2, max_runs=200 if cuda else 5)
    # No import may compete for the GIL with the timed runs: the judge's wall clock per call
    # bounds the candidate's reported time, and eager's event time includes its launches.
    with w.part("imports"):
        w.imports.wait()
    with w.part("inputs"):
        sets = _input_sets(w)
    with w.part("candidate"):
        cand = time_candidate(w, timer, len(sets))
    r.runtime_ms, r.wall_ms, r.noise = cand.median_ms, cand.wall_ms, round(cand.spread, 4)
    r.idle_ms = cand.idle_ms
    if w.opts.work is not None and len(w.opts.work) == 2:  # counted by an earlier evaluation
        r.flops, r.bytes = (float(v) for v in w.opts.work)
    else:
        with P.applied(w.policy), w.part("work"):  # counting runs the reference once: same flags
            r.flops, r.bytes = roofline.count_work(w.ref, sets[0])
    if cuda:
        c = roofline.load_ceilings()
        # A floor is a lower bound: any TF32 the policy allows (convolutions under `default`) counts.
        r.floor_ms = roofline.floor_ms(r.flops, r.bytes, c, w.policy.any_tf32)
        bytes_floor = roofline.bytes_floor_ms(r.bytes, c)
        if r.runtime_ms < roofline.BELOW_FLOOR_FACTOR * bytes_floor:
            raise Rejected("timing", f"{r.runtime_ms:.4f} ms is faster than physics allows "
                           f"(memory floor {bytes_floor:.4f} ms): a timing or correctness bug",
                           "below_floor")
    if w.opts.profile and cuda:
        reply = w.remote.link.request({"cmd": "breakdown", "set": 0})
        r.kernel_breakdown = [row for row in reply.get("rows") or [] if isinstance(row, dict)][:200]
    if not w.opts.baselines:
        return
    # The baselines run under the candidate's flags: one policy on both sides.
    with P.applied(w.policy):
        with w.part("eager"):
            r.eager_ms = timer.time(w.ref, sets).median_ms
        if cuda:
            with w.part("torch_compile"):
                r.compile_ms = _time_compiled(w, timer, sets)
    if cuda:
        r.timing_is_cpu = False
        r.speedup_vs_eager = r.eager_ms / r.runtime_ms if r.runtime_ms else None
        if r.compile_ms:
            r.speedup_vs_compile = r.compile_ms / r.runtime_ms


def _time_compiled(w: Worker, timer: Timer, sets: list[list[Any]]) -> float | None:
    try:
        compiled = torch.compile(w.ref)
        with torch.no_grad():
            compiled(*sets[0])  # compile outside the timed region (inductor caches it on disk)
        stats: TimingStats = timer.time(compiled, sets)
        return stats.median_ms
    except Exception as e:  # a baseline that fails to compile is reported, not fatal
        print(f"torch.compile baseline failed: {type(e).__name__}: {e}", flush=True)
        return None


def kernel_breakdown(model: torch.nn.Module, inputs: list[Any], policy: P.Policy) -> list[dict[str, Any]]:
    """Per-kernel CUDA time of one call, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), P.applied(policy):
        model(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*inputs)
            torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
        if t > 0 and ev.count:
            rows.append({"name": ev.key, "time_us": float(t), "launches": int(ev.count)})
    return sorted(rows, key=lambda d: -d["time_us"])
