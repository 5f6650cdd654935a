"""The judge's handle on the candidate process: starting it, one request at a time, its death.

`spawn_candidate` is the one place a candidate process is started (the OS sandbox wraps it).
`CandidateLink` sends one command and waits for its reply under the evaluation's deadline; a
candidate that dies, closes the pipe or overruns the deadline becomes a `Rejected` with the
check `crash` or `timeout`, never a hang of the judge.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

from . import wire
from .types import Rejected

# Environment names the candidate process may inherit: what Python, torch, Triton and CUDA
# need, nothing else (no API keys, no tokens, no proxies, no project settings).
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
             "HOME", "XDG_CACHE_HOME", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_ENV_PREFIXES = ("CUDA_", "NVIDIA_", "TRITON_", "TORCHINDUCTOR_")
# Rationale: the judge gives up on the candidate this long before the parent's deadline, so the
# verdict is a clean "timeout" written by the judge rather than a killed judge.
DEADLINE_MARGIN_S = 1.5
# Rationale: on the CPU the judge and the candidate take turns on the same cores, and OpenMP's
# default busy-waiting after each parallel region starved the other process: a 33x70 relu
# forward took 133 ms instead of 10 ms on a 2-core machine. Passive waiting gives the core back.
CPU_OMP_WAIT_POLICY = "PASSIVE"
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")


def deadline(request: dict[str, Any], timeout_s: float) -> float:
    """The judge's deadline for the candidate (time.monotonic()), from the parent's wall clock."""
    deadline_unix = request.get("deadline_unix") or time.time() + timeout_s
    return time.monotonic() + (deadline_unix - time.time()) - DEADLINE_MARGIN_S


def candidate_env(device: str, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if (k in _ENV_KEEP or k.startswith(_ENV_PREFIXES))
           and not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.update(TMPDIR=str(scratch), PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    if device == "cpu":
        env["TRITON_INTERPRET"], env["CUDA_VISIBLE_DEVICES"] = "1", ""
        env["OMP_WAIT_POLICY"] = CPU_OMP_WAIT_POLICY
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: the pre-exec hook must not import
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Runs in the child before exec: if the judge dies (killed at its deadline), so does the
    # candidate, even though it has a process group of its own.
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn_candidate(sock: socket.socket, scratch: Path, device: str, log: Path,
                    args: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start `python -P -m kernelskill.eval.candidate_proc [ARGS]` with `sock` as its stdin: its
    own session, a scrubbed environment, `scratch` as its working directory, output to `log`."""
    cmd = [sys.executable, "-P", "-m", "kernelskill.eval.candidate_proc", *args]
    with open(log, "wb") as logf:
        return subprocess.Popen(cmd, cwd=scratch, env=candidate_env(device, scratch), stdin=sock,
                                stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True, preexec_fn=_die_with_parent)


class CandidateLink:
    """One candidate process for one evaluation; a context manager that always kills it."""

    def __init__(self, device: str, deadline: float, log_dir: Path, log_name: str = "candidate.log",
                 args: tuple[str, ...] = ()):
        self.device, self.deadline = device, deadline
        self.scratch = Path(tempfile.mkdtemp(prefix="kernelskill-candidate-"))
        self.log = log_dir / log_name
        self.stage = "load"
        judge_end, cand_end = socket.socketpair()
        self.sock = judge_end
        try:
            self.proc = spawn_candidate(cand_end, self.scratch, device, self.log, args)
        finally:
            cand_end.close()

    def __enter__(self) -> CandidateLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.returncode is not None and self.sock.fileno() < 0:
            return
        with contextlib.suppress(OSError):
            wire.send_to_candidate(self.sock, {"cmd": "bye"})
        self.sock.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # nothing it started outlives the evaluation
        self.proc.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def request(self, msg: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        """Send one command, return its reply; a dead or late candidate is a Rejected."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._timeout()
        self.sock.settimeout(left)
        try:
            wire.send_to_candidate(self.sock, msg, fds)
            return wire.recv_from_candidate(self.sock)
        except TimeoutError:
            self._timeout()
        except (wire.LinkClosed, OSError, ValueError, UnicodeDecodeError) as e:
            self._died(e)

    def _timeout(self) -> NoReturn:
        self._kill()
        raise Rejected(self.stage, f"timed out: the candidate was still running at the evaluation's "
                       f"deadline, during {self.stage}", "timeout")

    def _died(self, why: BaseException) -> NoReturn:
        try:
            code = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self._kill()
            raise Rejected(self.stage, f"the candidate broke the protocol during {self.stage}: "
                           f"{type(why).__name__}: {str(why)[:200]}", "crash") from None
        how = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
        last = self.log_tail().strip().splitlines()
        raise Rejected(self.stage, f"candidate process died ({how}) during {self.stage}: "
                       f"{last[-1][:300] if last else 'no output'}", "crash")

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def log_tail(self, n: int = 3000) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""
