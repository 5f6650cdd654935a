"""A round's candidates judged side by side: up to `parallel` judges start, load, compile and
check correctness at once (the seconds of a later round's evaluation are mostly those, on the
host's CPU cores), then are timed one at a time.

Each judge's request carries eval/judge/gate.GATED: before its timed runs it pauses its
candidate's processes (eval/sandbox/pause.py), writes its mark and waits for its turn, which is
the end of its stdin. A turn is given only when every judge of the wave still running is parked
so, so no candidate code runs, and no judge imports or compiles, beside a timed run. A judge whose
pause failed is ended and its candidate judged again by itself (the caller's `evaluate`); so is one
whose result says the GPU was still busy at its turn (`contended`).

On a GPU this needs NVML (the gate's check that the GPU is idle): without it the caller judges
the candidates one after another. What it does not keep apart: the judges' compile stages, where
a candidate's autotuner times its configurations beside the others' GPU work, honest or not. A
pick moved so changes that candidate's speed, never its verdict's correctness, and the delivered
candidate is re-tuned and re-timed by itself (finalize); the timed runs that rank are a turn's
alone. So side by side is opt-in (`run.parallel_judges`): on an H100 a round of real variants
that autotuned new kernels ran slower so than one after another
(problems/measurements/h100-2026-12-07-side-by-side/).

Never for a thread's first evaluation, which times eager and torch.compile: those baselines are
timed once per problem, and reused by the side-by-side ones.
"""

from __future__ import annotations

import os
import time

from . import child
from .child import JUDGE, ChildRun, _Started
from .judge.gate import GATED, MARK, PAUSED
from .types import EvalOptions

POLL_S = 0.02


# Rationale: a judge holds its input sets (three), the reference's outputs and their float64
# copies, the candidate's outputs and the shared slots: about this many times the bytes the
# reference's forward moves (eval/timing/roofline.Work), which bounds its tensors.
FOOTPRINT_X, MEMORY_SHARE = 8, 0.5


def width(opts: EvalOptions, parallel: int) -> int:
    """How many judges may run side by side (1: one after another): timed, with baselines reused
    or none; on a GPU only where NVML answers, and as many as fit in half of the GPU's free
    memory at FOOTPRINT_X times the forward's bytes (unknown bytes: one)."""
    if parallel < 2 or not opts.timing or (opts.baselines and opts.known_baselines is None):
        return 1
    if opts.device != "cuda":
        return parallel
    free = free_gpu_bytes()
    moved = opts.work[1] if opts.work and len(opts.work) > 1 else None
    if free is None or not moved:
        return 1
    return max(1, min(parallel, int(free * MEMORY_SHARE // (FOOTPRINT_X * moved))))


def free_gpu_bytes() -> int | None:
    """Free memory of the GPU judges run on (CUDA_VISIBLE_DEVICES' first), from NVML without a
    CUDA context; None where NVML does not answer."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
            handle = pynvml.nvmlDeviceGetHandleByUUID(first) if first.startswith(("GPU-", "MIG-")) \
                else pynvml.nvmlDeviceGetHandleByIndex(int(first))
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).free)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, no driver, an odd device list: not here
        return None


def judge_side_by_side(requests: list[dict], device: str, timeout_s: float,
                       parallel: int) -> list[ChildRun | None]:
    """A ChildRun per request, in order, judged in waves of `parallel`; None for a candidate to
    judge again by itself (its pause failed)."""
    out: list[ChildRun | None] = [None] * len(requests)
    for start in range(0, len(requests), max(1, parallel)):
        _wave(list(range(start, min(start + parallel, len(requests)))), requests, device, timeout_s, out)
    return out


def _wave(wave: list[int], requests: list[dict], device: str, timeout_s: float,
          out: list[ChildRun | None]) -> None:
    # Each judge may wait for every other's timed runs: its own deadline covers them.
    span = timeout_s * (len(wave) + 1)
    reqs = {i: dict(requests[i], **{GATED: True, "deadline_unix": time.time() + span}) for i in wave}
    live: dict[int, _Started] = {}
    began = time.monotonic()
    try:
        for i in wave:
            live[i] = child._start(JUDGE, device, span, False, reqs[i])
        while live:
            for i in [i for i, c in live.items() if c.run.proc.poll() is not None]:
                out[i] = live.pop(i).finish(reqs[i], timeout_s)  # ended before its turn
            marks = {i: _mark(c) for i, c in live.items()}
            if live and all(marks.values()):
                for i in [i for i, m in marks.items() if m != PAUSED]:
                    live.pop(i).discard()  # out[i] stays None: judged again by itself
                if live:
                    i = min(live)
                    out[i] = live.pop(i).finish(reqs[i], timeout_s)
                continue
            if time.monotonic() - began > timeout_s:  # never reached its turn: a timeout
                for i in [i for i, m in marks.items() if not m]:
                    out[i] = live.pop(i).finish(reqs[i], 0.0)
                continue
            time.sleep(POLL_S)
    finally:
        for c in live.values():
            c.discard()


def _mark(c: _Started) -> str:
    """The judge's mark once it is parked ('' before)."""
    try:
        return (c.dir / MARK).read_text().strip()
    except OSError:
        return ""
