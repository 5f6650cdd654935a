"""An attacker for test_boundary.py: what a candidate process would do if every Python-level guard
were gone (no static check, no audit hook runs here). It prints one line per attempt; the test
judges by side effects (the secret, the listener, the files, the processes), not by these lines.

    python boundary_attacker.py JUDGE_PID SOCKET_PATH CACHE_DIR PROBLEM_FILE TAG

JUDGE_PID 0: only read (the test's control, whose judge must live to sign): no ptrace, which
would leave a reachable judge stopped, and no kill.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import sys

SECRET = re.compile(rb"KS-SECRET-[0-9a-f]{32}")
PTRACE_ATTACH = 16


def say(what: str, result: object) -> None:
    print(f"TRY {what}: {result}", flush=True)


def read_memory(pid: int) -> list[bytes]:
    """Every readable mapping of `pid`, searched for the judge's secret."""
    found: list[bytes] = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or "[vvar]" in line or "[vsyscall]" in line:
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            if hi - lo > 1 << 28:
                continue
            with contextlib.suppress(OSError, ValueError, OverflowError):
                mem.seek(lo)
                found += SECRET.findall(mem.read(hi - lo))
    return found


def attack_processes(judge_pid: int) -> None:  # noqa: C901 - one attempt after another
    libc = ctypes.CDLL(None, use_errno=True)
    me = os.getpid()
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    say("visible processes", pids)
    say("parent pid", os.getppid())
    for pid in pids:
        if pid == me:
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    say(f"{part} of {pid}", SECRET.findall(f.read()) or "read, no secret")
            except OSError as e:
                say(f"{part} of {pid}", f"refused: {e.strerror}")
        try:
            say(f"memory of {pid}", read_memory(pid) or "read, no secret")
        except OSError as e:
            say(f"memory of {pid}", f"refused: {e.strerror}")
        if judge_pid:
            rc = libc.ptrace(PTRACE_ATTACH, pid, None, None)
            say(f"ptrace {pid}", "attached" if rc == 0 else f"refused: {os.strerror(ctypes.get_errno())}")
    if judge_pid not in (me, 0, 1):
        try:
            os.kill(judge_pid, signal.SIGKILL)
            say(f"kill {judge_pid}", "sent")
        except OSError as e:
            say(f"kill {judge_pid}", f"refused: {e.strerror}")


def attack_files(sock_path: str, cache_dir: str, problem: str, tag: str) -> None:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        s.sendall(b"hello from the candidate")
        say("connect", "connected")
    except OSError as e:
        say("connect", f"refused: {e.strerror}")
    planted = (f"/dev/shm/{tag}", os.path.join(cache_dir, tag), os.path.join(os.path.dirname(problem), tag))
    for path in planted:
        try:
            with open(path, "w") as f:
                f.write("planted")
            say(f"write {path}", "written")
        except OSError as e:
            say(f"write {path}", f"refused: {e.strerror}")
    try:
        with open(problem, "rb") as f:
            say("read problem", f"read {len(f.read())} bytes")
    except OSError as e:
        say("read problem", f"refused: {e.strerror}")


def leave_a_process(tag: str) -> None:
    """A daemon: double fork and a session of its own, meant to outlive the evaluation."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", tag])
        os._exit(0)
    os.wait()
    say("daemon", "started")


def main() -> None:
    judge_pid, sock_path, cache_dir, problem, tag = sys.argv[1:6]
    attack_processes(int(judge_pid))
    attack_files(sock_path, cache_dir, problem, tag)
    leave_a_process(tag)


if __name__ == "__main__":
    main()
