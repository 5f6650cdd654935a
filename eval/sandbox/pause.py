"""Pausing a sandboxed child from the evaluator: every process it started is stopped by its
supervisor (eval/sandbox/proc_tree.py), which answers on the status pipe, a pipe the child
cannot write; a pause ends with `resume` or with the run (kill_all kills stopped processes too).

A judge waiting beside others pauses its candidate's processes, so that no code of a candidate
runs while another one is timed (eval/judge/gate.py).
"""

from __future__ import annotations

import contextlib
import os
import select
import time

from .layers import SandboxRun
from .supervisor import PAUSE, PAUSED, RESUME, UNPAUSED

# Rationale: the supervisor gives its descendants proc_tree.PAUSE_CAP_S (5 s) to stop; its answer
# comes within that plus a pass over /proc.
ANSWER_CAP_S = 8.0
PAUSED_WORD, UNPAUSED_WORD = PAUSED.decode().strip(), UNPAUSED.decode().strip()


def pause(run: SandboxRun, cap_s: float = ANSWER_CAP_S) -> bool:
    """Stop every process of `run`; True once its supervisor says none is left running. False:
    the supervisor could not (its /proc is not its own, a process would not stop), it is gone,
    or no answer came within `cap_s`."""
    if run.lifeline_w < 0 or run.status_r < 0 or not _write(run, PAUSE):
        return False
    end, seen = time.monotonic() + cap_s, len(run.said)
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([run.status_r], [], [], left)
        if not ready:
            break
        try:
            chunk = os.read(run.status_r, 256).decode()
        except BlockingIOError:
            continue
        except OSError:
            return False
        if not chunk:  # the supervisor is gone
            return False
        run.said += chunk
        answers = [w for w in run.said[seen:].split() if w in (PAUSED_WORD, UNPAUSED_WORD)]
        if answers:
            return answers[0] == PAUSED_WORD
    return False


def resume(run: SandboxRun) -> None:
    """Let every process of `run` go on (nothing happens to a run that was not paused)."""
    _write(run, RESUME)


def _write(run: SandboxRun, what: bytes) -> bool:
    with contextlib.suppress(OSError):
        return os.write(run.lifeline_w, what) == len(what)
    return False
