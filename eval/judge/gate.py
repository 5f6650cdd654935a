"""A judge judged beside others: a round's candidates start, load, compile and pass correctness
side by side, and are timed one at a time (eval/batch.py). Such a judge's request carries
GATED; before its timed runs it parks here:

1. its candidate process drains its GPU queue (`sync`), then every process of the candidate's is
   stopped by its sandbox's supervisor (eval/sandbox/pause.py: SIGSTOP, which no process can
   catch), so no code of this candidate runs while another candidate is timed;
2. it writes MARK beside its progress file ("paused", or "alone" where the pause failed: the
   parent then judges this candidate again, by itself) and waits for the parent to close its
   stdin: its turn;
3. it lets its candidate go on and, on a GPU, waits until the GPU's utilization counter reads
   zero: a kernel a paused candidate queued between its `sync` and its pause would show there.
   A GPU still busy after GPU_IDLE_CAP_S marks the result `contended`, and the parent judges
   that candidate again, by itself.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..sandbox.pause import pause, resume
from .parent_pipe import wait_closed

if TYPE_CHECKING:
    from .state import JudgeState

GATED = "gated"
"""The request's key: this judge waits for its turn before its timed runs."""
MARK = "gate"
PAUSED, ALONE = "paused", "alone"
# Rationale: NVML's utilization is the share of its last sample period (1/6 s to 1 s) in which a
# kernel ran: the sibling just timed shows for up to a period after it ended.
GPU_IDLE_CAP_S, GPU_POLL_S = 3.0, 0.05


def gated(w: JudgeState) -> bool:
    return w.req.get(GATED) is True


def park(w: JudgeState) -> None:
    """Pause the candidate, say so, wait for this judge's turn, let the candidate go on."""
    link = w.remote.link
    link.request({"cmd": "sync"})
    run = getattr(link, "run", None)
    paused = run is not None and pause(run)
    w.progress.with_name(MARK).write_text(PAUSED if paused else ALONE)
    wait_closed(max(w.deadline - time.monotonic(), 1.0))
    if paused:
        resume(run)
    if w.device == "cuda":
        with w.part("gpu_idle"):
            w.result.contended = not gpu_idle()


def gpu_idle(cap_s: float = GPU_IDLE_CAP_S) -> bool:
    """Whether the GPU's utilization counter reads zero within `cap_s` (True where the host has no
    NVML to ask: the parent judges side by side only where it has, eval/batch.py)."""
    import torch

    end = time.monotonic() + cap_s
    while True:
        try:
            if torch.cuda.utilization() == 0:
                return True
        except Exception:  # noqa: BLE001 - no NVML: nothing to read
            return True
        if time.monotonic() > end:
            return False
        time.sleep(GPU_POLL_S)
