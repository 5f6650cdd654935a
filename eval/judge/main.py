"""The judge process's entry: it starts the candidate process first, then imports the judge.

    python -P -m kernelskill.eval.judge.main REQUEST.json RESULT.json PROGRESS [--spare DEVICE]

Each process spends seconds importing torch; starting the candidate before the judge imports
torch (this module and judge_link are standard library only) overlaps the two imports. A spare
judge (`--spare`, eval/child.py) does all of that, and starts torch.compile's imports, before its
request exists: it reads the request once the parent writes GO on stdin. Before touching the GPU
(its CUDA context) and torch.compile's imports it waits for FREE, which the parent writes once no
evaluation of its own is running: a spare may start while another judge times on the same GPU.
Once started (its candidate process answers) it creates PARKED beside its progress file: the
parent lets the evaluation it started beside time its runs only then (parent_pipe.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from ..sandbox.env import child_exit
from .link import CPU_OMP_WAIT_POLICY, CandidateLink, deadline
from .parent_pipe import read_line

SPARE_FLAG = "--spare"
"""Start up, then wait for the request (GO on stdin) before reading it (eval/child.py)."""
GO = "go\n"
FREE = "free\n"
"""The GPU is free to touch: no evaluation of the parent's is running (it may come with GO)."""
PARKED = "parked"
"""A file a spare judge creates in its folder once its start-up is over (eval/child.py waits for it)."""
PING_S = 60.0
"""How long a spare waits for its candidate process to answer before it calls itself parked."""
PR_SET_DUMPABLE = 4


def main(argv: list[str] | None = None) -> int:
    _not_dumpable()
    args = list(argv or sys.argv[1:])
    spare = args[3:5] if args[3:4] == [SPARE_FLAG] else None
    # The signing key arrives on stdin before any problem code runs; no candidate code runs here.
    key = bytes.fromhex(read_line().strip())
    req_path, res_path, progress = (Path(a) for a in args[:3])
    if spare:
        device = "cuda" if spare[1] == "cuda" else "cpu"
        link = _start(device, progress, None)
        from .worker import judge  # torch and the judge, imported before the request exists
        _parked(link, progress)
        line = read_line()
        if line == FREE:  # the evaluation this spare started beside is over (GO alone: it is not)
            if device == "cuda":
                # What any request may need, started only now: torch.compile's imports are seconds
                # of a core, which a judge still timing should not share. Not on the CPU: a spare
                # serves a thread's later evaluations, which are handed the FLOP count and time no
                # torch.compile there, so they import no dynamo.
                from ..timing.warm_imports import WarmImports, modules_for
                WarmImports(modules_for(device, timing=True, baselines=True))
                _cuda_context()
            line = read_line()
        if line != GO:
            link.close()
            return 1  # the parent gave up on this spare
    req = json.loads(req_path.read_text())
    req_path.unlink()
    opts = req.get("options") or {}
    limit = deadline(req, float(opts.get("timeout_s", 600.0)))
    if spare:
        link.deadline = limit
    else:
        device = "cuda" if opts.get("device", "cuda") == "cuda" else "cpu"
        link = _start(device, progress, limit)
        from .worker import judge
    return judge(key, req, res_path, progress, link)


def _start(device: str, progress: Path, limit: float | None) -> CandidateLink:
    """The candidate process, started before torch is imported here (a spare's deadline comes
    with its request)."""
    if device == "cpu":  # read by OpenMP when torch loads
        os.environ["OMP_WAIT_POLICY"] = CPU_OMP_WAIT_POLICY
    return CandidateLink(device, float("inf") if limit is None else limit)


def _parked(link: CandidateLink, progress: Path) -> None:
    """Once its candidate process answers (its interpreter and torch are loaded) and the judge is
    imported here, a spare's start-up is over: PARKED beside its progress file tells the parent,
    which then lets the evaluation this spare started beside time its runs (parent_pipe.py)."""
    link.deadline = time.monotonic() + PING_S
    with contextlib.suppress(Exception):  # a candidate process that died: the request reports it
        link.request({"cmd": "ping"})
    link.deadline = float("inf")  # the request brings the evaluation's
    progress.with_name(PARKED).touch()


def _not_dumpable() -> None:
    """Before the key is read: no process of another uid or without CAP_SYS_PTRACE may ptrace
    this one or open its /proc/PID/mem, environ or fd/ (the kernel's check, whatever the
    candidate process runs as). A candidate process reads memory, forges a signed result or
    rewrites a tolerance only through those."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def _cuda_context() -> None:
    """Create this process's CUDA context while no request waits (0.3-1 s on a large GPU); a
    failure is left for the load stage to report in its own words."""
    import torch
    with contextlib.suppress(Exception):
        torch.empty(1, device="cuda")


if __name__ == "__main__":
    child_exit(main())
