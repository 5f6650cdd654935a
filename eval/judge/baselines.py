"""Eager and torch.compile timed as the candidate is: the user's reference in a process of its own.

The candidate is timed in a sandboxed process on inputs the judge writes into shared buffers before
each run (remote_timing). Timing eager here, in the judge, on its own inputs, left out what that
process costs: on an H200 kept references (the user's module, unchanged) measured 0.92-0.99x eager.
So the baselines run through the same door: a second candidate process whose "candidate" is the
reference itself (its source as the judge executed it, `ModelNew = Model`), built with the same
weight seed, timed by the same loop, command and poisoning; then, in that same process,
torch.compile of it. A kept reference then measures about 1.0x by construction, and every
speedup is a ratio of two timings taken the same way.

Where the process cannot be used (it failed to start or to run the reference, or torch.compile
failed inside it), the baseline falls back to the judge's in-process timing and the result says
so (`EvalResult.baselines_in`). On the CPU the judge times in-process unless the options ask for
the process: a CPU timing is never a speedup, and a process per evaluation costs the tests seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..timing.warm_imports import WARM_FLAG
from ..types import Rejected
from .link import CandidateLink
from .memory import largest_live
from .remote import Remote

if TYPE_CHECKING:
    from ..timing.protocol import Timer
    from .remote_timing import CandidateTiming
    from .state import JudgeState

# EvalOptions.baselines_in: where eager and torch.compile are timed; EvalResult.baselines_in also
# PROCESS_JUDGE: eager in the process, torch.compile in the judge after it failed there.
# REUSED: both handed over from an earlier evaluation of the same problem (known_baselines).
PROCESS, JUDGE, AUTO, PROCESS_JUDGE, REUSED = "process", "judge", "auto", "process+judge", "reused"
REFERENCE_ALIAS = "\n\nModelNew = Model  # the judge's baseline process times the reference as a candidate\n"


def wanted(w: JudgeState) -> bool:
    """Whether this evaluation times its baselines in a process of their own."""
    mode = w.opts.baselines_in
    return w.opts.times_baselines() and (mode == PROCESS or (mode == AUTO and w.device == "cuda"))


def start(w: JudgeState) -> CandidateLink | None:
    """Start the baseline process early, so that it imports torch while the candidate is judged."""
    if not wanted(w):
        return None
    try:
        warm = (WARM_FLAG,) if w.device == "cuda" else ()  # torch.compile is timed on CUDA only
        return CandidateLink(w.device, w.deadline, log_name="baseline.log", args=warm, role="baseline")
    except OSError as e:
        print(f"baseline process did not start ({e}); baselines are timed in the judge", flush=True)
        return None


@dataclass
class Baselines:
    eager_ms: float
    compile_ms: float | None
    where: str
    """'process' (both in the baseline process), 'process+judge' (eager there, torch.compile in
    the judge after it failed there) or 'judge'."""


def time_in_process(w: JudgeState, link: CandidateLink, timer: Timer, n_sets: int) -> Baselines | None:
    """Eager, then torch.compile, in the baseline process; None when eager could not run there.
    The reference is built from the judge's weight seed and init values; torch.compile is only
    tried on CUDA, as in the judge."""
    from .remote_timing import time_remote

    link.stage = w.result.stage
    pool = torch.cuda.MemPool() if w.device == "cuda" else None  # not the candidate's segments
    remote = Remote(link, w.device, pool)
    try:
        reply = link.request({"cmd": "init", "device": w.device, "precision": w.policy.name,
                              "source": w.problem.source + REFERENCE_ALIAS,
                              "filename": w.req["problem_name"], "weight_seed": w.weight_seed,
                              "problem_file": w.req["problem_name"], "init_values": w.init_values,
                              "reference": True})
        if not reply.get("ok"):
            raise Rejected("timing", str(reply.get("error"))[:300], "baseline")
        remote.mirror(w.remote)
        eager: CandidateTiming = time_remote(w, remote, timer, n_sets, judged=False)
    except (Rejected, RuntimeError) as e:  # RuntimeError: out of device memory for its buffers
        link.close()  # its memory, freed before the judge times anything
        print(f"the baseline process could not time the reference{_judge_memory(w.device)}; "
              f"baselines are timed in the judge: {e}", flush=True)
        return None
    if w.device != "cuda":
        return Baselines(eager.median_ms, None, PROCESS)
    try:
        reply = link.request({"cmd": "compile"})
        if not reply.get("ok"):
            raise Rejected("timing", str(reply.get("error"))[:300], "baseline")
        compiled = time_remote(w, remote, timer, n_sets, judged=False)
    except (Rejected, RuntimeError) as e:
        link.close()
        print(f"torch.compile failed in the baseline process ({e}); it is timed in the judge",
              flush=True)
        return Baselines(eager.median_ms, None, PROCESS_JUDGE)
    return Baselines(eager.median_ms, compiled.median_ms, PROCESS)


def _judge_memory(device: str) -> str:
    """What the judge itself holds on the device, for the log line of a baseline that fell back
    (an out-of-memory there names the device's total, not who holds it)."""
    if device != "cuda":
        return ""
    free, total = torch.cuda.mem_get_info()
    return (f" (the judge holds {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated, "
            f"{torch.cuda.memory_reserved() / 2**30:.1f} GiB reserved, largest: "
            f"{largest_live('cuda') or 'none found'}; device {free / 2**30:.1f} of "
            f"{total / 2**30:.1f} GiB free)")
