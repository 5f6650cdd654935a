"""The timing stage: candidate, eager and torch.compile under one protocol, plus speed of light.

The candidate is timed in its own process (remote_timing); eager and torch.compile in the
baseline process by the same loop (baselines.py), or here in the judge on its own input sets where
that process is not used; always under the same precision flags.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import torch

from .. import harness as H
from .. import precision as P
from ..timing import roofline
from ..timing.protocol import Timer, TimingStats
from ..types import Rejected
from . import baselines
from .gate import gated, park
from .memory import release
from .parent_pipe import wait_closed
from .remote_timing import time_remote

if TYPE_CHECKING:
    from .state import JudgeState

# Rationale: three rotating input sets defeat caching by pointer; fewer when the inputs are huge,
# so the sets never crowd out the model itself. Every run also gets fresh values (remote_timing).
MAX_SETS, SET_BYTES_BUDGET = 3, 12 << 30


def _input_sets(w: JudgeState) -> list[list[Any]]:
    """The judge's own input sets for baselines timed here, as many as the candidate rotates through."""
    return [H.make_inputs(w.problem, H.secret_seed(), w.device) for _ in range(_n_sets(w))]


def run_timing(w: JudgeState) -> None:
    r, cuda = w.result, w.device == "cuda"
    timer, r.timing_mode = _timer(w), w.opts.timing_mode
    # No import may compete for the GIL with the timed runs: the judge's wall clock per call
    # bounds the candidate's reported time, and eager's event time includes its launches.
    with w.part("imports"):
        w.imports.wait()
    with w.part("quiet"):
        quiet_host(w)
    if gated(w):  # judged beside others: its turn, its siblings paused (gate.py)
        with w.part("gate"):
            park(w)
    with w.part("candidate"):
        cand = time_remote(w, w.remote, timer, _n_sets(w))
    r.runtime_ms, r.wall_ms, r.noise = cand.median_ms, cand.wall_ms, round(cand.spread, 4)
    r.timed_runs = cand.runs
    r.idle_ms, r.protocol_ms, r.copy_ms = cand.idle_ms, cand.overhead_ms, cand.copy_ms
    r.reported_ms = cand.reported_ms  # the candidate process's own clock: a cross-check only
    work = roofline.Work.given(w.opts.work)  # counted by an earlier evaluation
    if work is None:
        with P.applied(w.policy), w.part("work"):  # counting runs the reference once: same flags
            work = roofline.count_work(w.ref, H.clone(w.remote.sets[0].items))
    r.flops, r.bytes, r.conv_flops = work
    if cuda:
        c = roofline.load_ceilings()
        # A floor is a lower bound at the policy's fastest legal rates: convolutions at the TF32
        # rate where the policy allows it (`default`, `tf32`), matmul-class work at the fastest
        # fp32-accurate rate unless matmul TF32 is allowed (`tf32` only).
        r.floor_ms = roofline.policy_floor_ms(work, c, w.policy)
        bytes_floor = roofline.bytes_floor_ms(r.bytes, c)
        if r.runtime_ms < roofline.BELOW_FLOOR_FACTOR * bytes_floor:
            raise Rejected("timing", f"{r.runtime_ms:.4f} ms is faster than physics allows "
                           f"(memory floor {bytes_floor:.4f} ms): a timing or correctness bug",
                           "below_floor")
    if w.opts.profile and cuda:
        with w.part("breakdown"):
            reply = w.remote.link.request({"cmd": "breakdown", "set": 0})
        r.kernel_breakdown = [row for row in reply.get("rows") or [] if isinstance(row, dict)][:200]
    if not w.opts.baselines:
        return
    # The candidate has nothing left to do: it ends before the baselines run, so that no work it
    # left behind (a kernel on another stream, launched after its last timed run) slows them down.
    w.link.close()
    known = w.opts.reused_baselines()
    if known is not None:  # timed by an earlier evaluation of this problem, under this protocol
        r.eager_ms, r.compile_ms = known if cuda else (known[0], None)
        r.baselines_in = baselines.REUSED
    else:
        # The judge's cached blocks are memory the baseline process could use. (What once filled
        # an H100 on a 2 GiB output was not cache but the judge's copies of the baseline
        # process's outputs, now dropped: remote_timing.time_remote,
        # problems/measurements/h100-2026-12-06-judge-boundary/.)
        release(cuda)
        _time_baselines(w, timer)
    if cuda:
        r.timing_is_cpu = False
        r.speedup_vs_eager = r.eager_ms / r.runtime_ms if r.runtime_ms and r.eager_ms else None
        if r.compile_ms:
            r.speedup_vs_compile = r.compile_ms / r.runtime_ms


def quiet_host(w: JudgeState) -> None:
    """Wait until no other process of the evaluation imports beside the timed runs: the baseline
    process's torch.compile stack (it imports while the candidate is judged) and a spare judge the
    parent started with this evaluation (its stdin closes once that spare is parked). A host-bound
    forward is timed slower beside them (parent_pipe.py)."""
    if w.baseline_link is not None:
        with contextlib.suppress(Rejected):  # a dead baseline process: its baselines fall back
            w.baseline_link.request({"cmd": "settle"})
    if not gated(w):  # a gated judge waits for its turn instead (gate.py)
        wait_closed()


def _timer(w: JudgeState) -> Timer:
    """The protocol's loop: a budget of timed runs per model; under timing_mode 'rank' (an
    intermediate candidate, compared with the best so far) a quarter of it, enough to rank by a
    median whose spread is measured too (reviewer.is_better reads it)."""
    if w.device != "cuda":
        return Timer(w.device, budget_s=0.5, min_runs=2, max_runs=5)
    if w.opts.timing_mode == "rank":
        return Timer(w.device, budget_s=w.opts.timing_budget_s / 4, min_runs=5, max_runs=50)
    return Timer(w.device, budget_s=w.opts.timing_budget_s, min_runs=10, max_runs=200)


def _n_sets(w: JudgeState) -> int:
    """How many input sets the runs rotate through: three, fewer when the inputs are huge."""
    per_set = roofline.tensor_bytes(w.remote.sets[0].items)
    return max(2, min(MAX_SETS, SET_BYTES_BUDGET // max(per_set, 1)))


def _time_baselines(w: JudgeState, timer: Timer) -> None:
    """Eager and torch.compile under the candidate's flags (one policy on both sides): in the
    baseline process by the candidate's own protocol where it runs (eval/judge/baselines.py), else here."""
    r, cuda = w.result, w.device == "cuda"
    found = None
    if w.baseline_link is not None:
        with w.part("baselines"):
            found = baselines.time_in_process(w, w.baseline_link, timer, _n_sets(w))
    if found is not None:
        r.eager_ms, r.compile_ms, r.baselines_in = found.eager_ms, found.compile_ms, found.where
        if found.where == baselines.PROCESS:
            return
    with w.part("inputs"):
        sets = _input_sets(w)
    with P.applied(w.policy):
        if found is None:
            with w.part("eager"):
                r.eager_ms = timer.time(w.ref, sets).median_ms
            r.baselines_in = baselines.JUDGE
        if cuda:
            with w.part("torch_compile"):
                r.compile_ms = _time_compiled(w, timer, sets)


def _time_compiled(w: JudgeState, timer: Timer, sets: list[list[Any]]) -> float | None:
    try:
        compiled = torch.compile(w.ref)
        with torch.no_grad():
            compiled(*sets[0])  # compile outside the timed region (inductor caches it on disk)
        stats: TimingStats = timer.time(compiled, sets)
        return stats.median_ms
    except Exception as e:  # a baseline that fails to compile is reported, not fatal
        print(f"torch.compile baseline failed: {type(e).__name__}: {e}", flush=True)
        return None


