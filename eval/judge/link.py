"""The judge's handle on the candidate process: starting it, one request at a time, its death.

`spawn_candidate` is the one place a candidate process is started (the OS sandbox wraps it).
`CandidateLink` sends one command and waits for its reply under the evaluation's deadline; a
candidate that dies, closes the pipe or overruns the deadline becomes a `Rejected` with the
check `crash` or `timeout`, never a hang of the judge.
"""

from __future__ import annotations

import contextlib
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

from ..candidate import wire
from ..sandbox import layers as sandbox
from ..sandbox.env import child_env, private_caches
from ..types import Rejected
from . import tuning

# Rationale: the judge gives up on the candidate this long before the parent's deadline, so the
# verdict is a clean "timeout" written by the judge rather than a killed judge.
DEADLINE_MARGIN_S = 1.5
# Rationale: on the CPU the judge and the candidate take turns on the same cores, and OpenMP's
# default busy-waiting after each parallel region starved the other process: a 33x70 relu
# forward took 133 ms instead of 10 ms on a 2-core machine. Passive waiting gives the core back.
CPU_OMP_WAIT_POLICY = "PASSIVE"


def deadline(request: dict[str, Any], timeout_s: float) -> float:
    """The judge's deadline for the candidate (time.monotonic()), from the parent's wall clock."""
    deadline_unix = request.get("deadline_unix") or time.time() + timeout_s
    return time.monotonic() + (deadline_unix - time.time()) - DEADLINE_MARGIN_S


def _extra_env(device: str) -> dict[str, str]:
    """What a candidate process's environment has beyond sandbox.env.child_env's allowlist: no
    bytecode written (the packages are read-only to it, and a failed __pycache__ write inside the
    guard is a refused change outside its scratch folder); on the CPU, OpenMP waiting passively."""
    extra = {"PYTHONDONTWRITEBYTECODE": "1"}
    if device == "cpu":
        extra["OMP_WAIT_POLICY"] = CPU_OMP_WAIT_POLICY
    return extra


def candidate_env(device: str, scratch: Path) -> dict[str, str]:
    """The candidate process's whole environment (a fork server in the tests starts it so)."""
    return child_env(device, scratch) | _extra_env(device)


def spawn_candidate(sock: socket.socket, scratch: Path, device: str, log: Path,
                    args: tuple[str, ...] = (), role: str = "candidate") -> sandbox.SandboxRun:
    """Start `python -P -m kernelskill.eval.candidate.main [ARGS]` in the OS sandbox as `role`
    (sandbox.ROLES: another uid than this judge, PID, mount and network namespaces of its own, a
    seccomp filter), `sock` its stdin and its one descriptor of ours, `scratch` its working
    directory and the one folder it writes, output to `log` (inside `scratch`)."""
    cmd = [sys.executable, "-P", "-m", "kernelskill.eval.candidate.main", *args]
    with open(log, "wb") as logf:
        return sandbox.sandboxed_popen(cmd, scratch, device, role=role, extra_env=_extra_env(device),
                                       stdin=sock, stdout=logf, stderr=subprocess.STDOUT)


class CandidateLink:
    """One candidate process for one evaluation; a context manager that always kills it."""

    def __init__(self, device: str, deadline: float, log_name: str = "candidate.log",
                 args: tuple[str, ...] = (), role: str = "candidate"):
        self.device, self.deadline = device, deadline
        self.scratch = Path(tempfile.mkdtemp(prefix="kernelskill-candidate-"))
        self.log = self.scratch / log_name  # in its own folder: it holds no file of the judge's
        self.stage = "load"
        self.role = role
        self.tuning: dict[str, str] = {}
        """Its autotuning records, harvested once it is dead (close)."""
        judge_end, cand_end = socket.socketpair()
        self.sock = judge_end
        try:
            started = spawn_candidate(cand_end, self.scratch, device, self.log, args, role=role)
        finally:
            cand_end.close()
        # The sandbox's run, or a stand-in with Popen's interface (the author tests' fork server).
        self.run = started if isinstance(started, sandbox.SandboxRun) else None
        self.proc = started.proc if self.run is not None else started

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
        self._kill()  # nothing it started outlives the evaluation: its PID namespace goes with it
        self.proc.wait()
        if self.role == "candidate":  # read only now: no process of it changes the folder any more
            self.tuning = tuning.harvest(self.scratch, self._triton_cache())
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _triton_cache(self) -> Path:
        return private_caches(self.scratch)["TRITON_CACHE_DIR"]

    def seed_tuning(self, records: dict[str, str] | None) -> int:
        """Put earlier autotuning records in its Triton cache before it is handed any code (a
        started process waits for `init`); the folders go to its uid, so it still writes there."""
        if self.role != "candidate" or not records:
            return 0
        cache = self._triton_cache()
        written = tuning.seed(cache, records)
        st = self.scratch.stat()
        if written and st.st_uid != os.geteuid():
            for p in [cache.parent, *cache.parent.rglob("*")]:
                os.chown(p, st.st_uid, st.st_gid, follow_symlinks=False)
        return written

    def request(self, msg: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        """Send one command, return its reply; a dead or late candidate is a Rejected."""
        self.send(msg, fds)
        return self.reply()

    def send(self, msg: dict[str, Any], fds: list[int] | None = None) -> None:
        """Send one command without waiting for its reply (the judge works meanwhile); `reply`
        collects it, before any other command."""
        self._settimeout()
        try:
            wire.send_to_candidate(self.sock, msg, fds)
        except TimeoutError:
            self._timeout()
        except (wire.LinkClosed, OSError, ValueError, UnicodeDecodeError) as e:
            self._died(e)

    def reply(self) -> dict[str, Any]:
        """The reply to the command `send` sent."""
        self._settimeout()
        try:
            return wire.recv_from_candidate(self.sock)
        except TimeoutError:
            self._timeout()
        except (wire.LinkClosed, OSError, ValueError, UnicodeDecodeError) as e:
            self._died(e)

    def _settimeout(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self._timeout()
        self.sock.settimeout(left)

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
        if self.run is not None:
            sandbox.kill_all(self.run)
            code = self.run.returncode()
        how = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
        last = self.log_tail().strip().splitlines()
        raise Rejected(self.stage, f"candidate process died ({how}) during {self.stage}: "
                       f"{last[-1][:300] if last else 'no output'}", "crash")

    def _kill(self) -> None:
        if self.run is not None:
            sandbox.kill_all(self.run)  # returns once every process of it is gone
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def log_tail(self, n: int = 3000) -> str:
        try:  # a file the candidate controls: no FIFO, no link, read capped
            with open(self.log, "rb", opener=sandbox.no_block) as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - n))
                return f.read(n).decode(errors="replace")
        except OSError:
            return ""
