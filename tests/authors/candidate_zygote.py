"""A fork server for the author tests' candidate processes (CPU only).

Each evaluation starts a candidate process (eval/judge/link.py: `python -P -m
kernelskill.eval.candidate.main`), and on the 2-core CI machine importing torch and Triton there
is ~2 s of CPU, about three quarters of a small evaluation, and the author tests judge
hundreds of candidates.
Here one process per test worker imports what a candidate process imports, once, and forks a
child per candidate; the child runs candidate_proc's own `main` with the arguments the real start
would give it (its own session, the scrubbed environment, the scratch folder as working
directory, the socket as stdin, output to the log), so what runs the candidate code is the same.

Tests only, and only for candidates the author tests judge in-process on the CPU: the product
starts every candidate with a fresh interpreter (a fork server shared across evaluations would be
a channel between them), and tests/eval keeps testing that real start.

    python -P candidate_zygote.py      (fd 0: a SOCK_SEQPACKET socket to the test worker)

Protocol: the test worker sends {"scratch", "log", "env"} with the candidate's socket attached;
the server replies {"pid"}, and {"exit": pid, "code"} when a child ends (it is the children's
parent, so it reaps them and tells the worker, which waits on them through `ForkedProc`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a forked child: SIGKILL when the parent (the judge, or this server) dies."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---- the server (its own process) ------------------------------------------------------------------------
def _child(msg: dict, fd: int) -> None:
    """In the forked child: become what `spawn_candidate` starts, then run eval.candidate.main.main."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _die_with_parent()
        os.environ.clear()
        os.environ.update(msg["env"])
        tempfile.tempdir = None  # TMPDIR is this candidate's scratch folder now
        os.chdir(msg["scratch"])
        log = os.open(msg["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(fd, 0)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        from kernelskill.eval.candidate import main as candidate_proc
        code = candidate_proc.main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported in the log like an interpreter would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # exiting either way
                stream.flush()
        os._exit(code)


def serve() -> None:
    from kernelskill.eval.candidate import main as candidate_proc  # noqa: F401 - torch, triton and the candidate side
    ctl = socket.socket(fileno=0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    ctl.send(json.dumps({"ready": True}).encode())
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                ctl.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
        if ctl in ready:
            data, fds, _, _ = socket.recv_fds(ctl, 1 << 20, 1)
            if not data:
                return  # the test worker is gone
            pid = os.fork()
            if pid == 0:
                _child(json.loads(data), fds[0])
            os.close(fds[0])
            ctl.send(json.dumps({"pid": pid}).encode())


# ---- the test worker's side -------------------------------------------------------------------------------
class ForkedProc:
    """What CandidateLink uses of a subprocess.Popen, for a child of the fork server."""

    def __init__(self, server: Zygote, pid: int, args: list[str]):
        self.server, self.pid, self.args = server, pid, args

    @property
    def returncode(self) -> int | None:
        return self.server.exits.get(self.pid)

    def wait(self, timeout: float | None = None) -> int:
        server = self.server
        with server.changed:
            if not server.changed.wait_for(lambda: self.pid in server.exits or server.dead, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        # A dead server's children died with it (their parent-death signal).
        return server.exits.get(self.pid, -signal.SIGKILL)


class Zygote:
    """One fork server; `spawn` has `spawn_candidate`'s signature (device 'cpu')."""

    exits: dict[int, int]

    def __init__(self, env: dict[str, str], scratch: Path):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([sys.executable, "-P", __file__], stdin=theirs, env=env,
                                     cwd=scratch, close_fds=True, preexec_fn=_die_with_parent)
        theirs.close()
        self.ctl, self.exits, self.dead = ours, {}, False
        self.changed = threading.Condition()
        self.lock = threading.Lock()  # one spawn at a time: its reply is the next "pid" message
        self.pids: list[int] = []
        self.ctl.settimeout(300.0)  # its imports, on a loaded machine
        try:
            ready = self.ctl.recv(1 << 16)
        except OSError:
            ready = b""
        if ready != json.dumps({"ready": True}).encode():
            self.close()
            raise RuntimeError("the candidate fork server did not start")
        self.ctl.settimeout(None)
        threading.Thread(target=self._read, daemon=True, name="candidate-zygote").start()

    def _read(self) -> None:
        while data := self.ctl.recv(1 << 16):
            msg = json.loads(data)
            with self.changed:
                if "exit" in msg:
                    self.exits[msg["exit"]] = msg["code"]
                else:
                    self.pids.append(msg["pid"])
                self.changed.notify_all()
        with self.changed:  # the server died: nothing of it will be reported again
            self.dead = True
            self.changed.notify_all()

    def spawn(self, env: dict[str, str], sock: socket.socket, scratch: Path, log: Path) -> ForkedProc:
        with self.lock, self.changed:
            msg = json.dumps({"env": env, "scratch": str(scratch), "log": str(log)}).encode()
            socket.send_fds(self.ctl, [msg], [sock.fileno()])
            if not self.changed.wait_for(lambda: self.pids or self.dead, 30.0) or not self.pids:
                raise RuntimeError("the candidate fork server did not answer")
            return ForkedProc(self, self.pids.pop(0), ["candidate_zygote"])

    def close(self) -> None:
        self.ctl.close()
        self.proc.kill()
        self.proc.wait()


if __name__ == "__main__":
    serve()
