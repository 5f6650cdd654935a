"""The judge's stdin: what the parent (eval/child.py) tells it, in order.

1. the per-run signing key, one line;
2. for a spare judge, FREE (the evaluation it started beside is over) and GO (its request is
   written), one line each (eval/judge/main.py);
3. the pipe's end: the parent closes it once nothing of its own starts beside this judge any more,
   that is once the spare judge it started with this evaluation has finished starting (its
   interpreter, torch, its candidate process). The timing stage waits for that end
   (`wait_closed`), so that no import of another process shares the host with timed runs: a
   host-bound forward, a few dozen launches of a CNN block, was suspected of measuring 11% slower
   beside one (H100, 2026-12-06, a kept reference of level3/03 at 0.89x eager in the judge,
   problems/measurements/h100-2026-12-06-level3/). Not shown: with this wait, the same kept
   reference measured 0.851x once and 0.978x and 0.998x otherwise
   (problems/measurements/h100-2026-12-06-judge-gap/).

Read unbuffered, a byte at a time: a buffered reader may take the next line, or the end, into its
buffer with the one asked for, where a wait on the descriptor no longer sees it.
"""

from __future__ import annotations

import os
import select
import time

STDIN = 0
_attached: list[int] = []
"""The pipe's descriptor once `read_line` has read from it: a judge the parent started (a judge's
worker run in a test's own process has no parent pipe to wait for)."""
# Rationale: the parent closes the pipe within a spare's start-up (3-4 s on an H100 host): a spare
# that takes longer is late for a reason of its own, and timing waits for it no further.
QUIET_CAP_S = 20.0


def read_line(fd: int = STDIN) -> str:
    """One line from the parent ('' at the pipe's end), read without a buffer."""
    if fd not in _attached:
        _attached.append(fd)
    out = bytearray()
    while True:
        b = os.read(fd, 1)
        if not b:
            break
        out += b
        if b == b"\n":
            break
    return out.decode(errors="replace")


def wait_closed(cap_s: float = QUIET_CAP_S) -> bool:
    """Wait until the parent closes the pipe, for at most `cap_s` seconds; True when it did (or
    there is no parent pipe). Bytes that come instead of the end (none are expected) are dropped."""
    if not _attached:
        return True
    fd, end = _attached[0], time.monotonic() + cap_s
    while (left := end - time.monotonic()) > 0:
        try:
            ready, _, _ = select.select([fd], [], [], left)
            if ready and not os.read(fd, 4096):
                _attached.clear()  # closed: later waits return at once
                return True
        except OSError:  # the descriptor is gone: nothing to wait for
            return True
    return False
