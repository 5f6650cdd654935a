"""The timing stage: candidate, eager and torch.compile under one protocol, plus speed of light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from . import harness as H
from . import precision as P
from . import roofline
from .compare import compare
from .timing import Timer, TimingStats, hidden_work
from .types import Rejected

if TYPE_CHECKING:
    from .worker import Worker

# Rationale: three rotating input sets defeat caching by pointer or by value; fewer when the
# inputs are huge, so the sets never crowd out the model itself.
MAX_SETS, SET_BYTES_BUDGET = 3, 12 << 30


def _input_sets(w: Worker) -> list[list[Any]]:
    first = H.make_inputs(w.problem, w.opts.seed + 500, w.device)
    per_set = roofline.tensor_bytes(first)
    n = max(2, min(MAX_SETS, SET_BYTES_BUDGET // max(per_set, 1)))
    return [first] + [H.make_inputs(w.problem, w.opts.seed + 500 + i, w.device) for i in range(1, n)]


def run_timing(w: Worker) -> None:
    r, cuda = w.result, w.device == "cuda"
    timer = Timer(w.device, budget_s=w.opts.timing_budget_s if cuda else 0.5,
                  min_runs=10 if cuda else 2, max_runs=200 if cuda else 5)
    sets = _input_sets(w)
    spot = len(sets) - 1
    with P.applied(w.policy):
        cand = timer.time(w.cand, sets, keep_output_of=spot)
    r.runtime_ms, r.wall_ms, r.noise = cand.median_ms, cand.wall_ms, round(cand.spread, 4)
    # Spot check: a timed run's output must still be right (no fast path that only runs when timed).
    ref64, ref32, _ = w._reference_outputs(sets[spot])
    verdict = compare(cand.last_output, ref64, ref32, w.opts.atol, w.opts.rtol)
    if not verdict.ok:
        raise Rejected("timing", f"output of a timed run is wrong: {verdict.reason}", "timed_output")
    if hidden_work(cand, w.device):
        raise Rejected("timing", f"wall clock {cand.wall_ms:.3f} ms per call vs {cand.median_ms:.3f} ms "
                       "on the stream: work escapes the timed stream", "hidden_work")
    with P.applied(w.policy):  # counting runs the reference once: under the same flags too
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
        r.kernel_breakdown = kernel_breakdown(w.cand, sets[0], w.policy)
    if not w.opts.baselines:
        return
    # The baselines run under the candidate's flags: one policy on both sides.
    with P.applied(w.policy):
        r.eager_ms = timer.time(w.ref, sets).median_ms
        if cuda:
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
