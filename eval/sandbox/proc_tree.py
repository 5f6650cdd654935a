"""A supervisor's descendants, read from /proc, and pausing them: evaluator code only, standard
library only (eval/sandbox/supervisor.py loads it by path, as `python -I -S` imports no package).

Pausing is how a judge that waits beside others (a round's candidates judged side by side,
eval/batch.py) keeps its candidate's processes from running while another candidate is timed:
SIGSTOP cannot be caught, blocked or ignored, so a stopped process runs no code of its own until
the supervisor sends SIGCONT; whatever it had queued on a GPU is the judge's to check
(eval/judge/gate.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

_STOPPED = ("T", "t", "Z", "X")
# Rationale: a process stops once it leaves the kernel; one inside a driver call takes a few ms.
PAUSE_CAP_S = 5.0


def proc_is_ours() -> bool:
    """Whether /proc shows this process's own PID namespace (its pids are ours to signal)."""
    return os.readlink("/proc/self") == str(os.getpid())


def _table() -> dict[int, tuple[str, int]]:
    """Every process /proc shows, in one pass: pid -> (its state letter, its parent's pid)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            out[int(name)] = (fields[0], int(fields[1]))
    return out


def children_of(root: int, table: dict[int, tuple[str, int]] | None = None) -> list[int]:
    """Every live descendant of `root` (parents before children), from `table` or /proc."""
    kids: dict[int, list[int]] = {}
    for pid, (state, parent) in (table if table is not None else _table()).items():
        if state != "Z":
            kids.setdefault(parent, []).append(pid)
    out, todo = [], list(kids.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def _running() -> list[int]:
    table = _table()
    return [pid for pid in children_of(os.getpid(), table) if table[pid][0] not in _STOPPED]


def stop_descendants(cap_s: float = PAUSE_CAP_S) -> bool:
    """SIGSTOP every descendant; True once none is left running. As PID 1 of a namespace one
    kill(-1) reaches every process in it, atomically with respect to fork (a process with a stop
    pending cannot complete one); as a subreaper, pass after pass until a pass finds none running
    (a process forked between two passes is stopped by the next). False where /proc is not ours
    to read, or when `cap_s` passed first."""
    if os.getpid() == 1:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGSTOP)
    if not proc_is_ours():
        return os.getpid() == 1  # kill(-1) reached them all; the kernel stops each one
    end = time.monotonic() + cap_s
    while running := _running():
        if time.monotonic() > end:
            return False
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        time.sleep(0.002)
    return True


def continue_descendants() -> None:
    """SIGCONT every descendant (a pause's end)."""
    if os.getpid() == 1:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGCONT)
        return
    if proc_is_ours():
        for pid in children_of(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
