"""The judge behind an OS boundary: a candidate process that runs whatever it likes, with no
Python-level guard at all (tests/eval/boundary_attacker.py), reads no secret of its judge, kills
it not, reaches no socket of the host, writes nothing another evaluation sees and leaves no
process behind. Each test checks the side effect itself; a control run shows the same attacker
winning against a judge without the boundary, so the tests can fail. The judge and its candidate
are sandboxed as for a CPU evaluation, or a GPU one under KS_ATTACK_DEVICE=cuda (attack_device.py).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from pathlib import Path

import pytest
from attack_device import DEVICE, needs_device
from kernelskill.eval.child import ChildRun, run_child
from kernelskill.eval.sandbox.env import compile_caches
from kernelskill.eval.sandbox.report import report
from sandbox_util import LAYERS, alive_with, needs

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "problems" / "level1" / "11_gelu.py"
pytestmark = [pytest.mark.usefixtures("sandbox_child_on_path"), needs_device]


class Listener:
    """A Unix socket of the host in a folder every process sees (/var/tmp), counting connections."""

    def __init__(self) -> None:
        base = "/var/tmp" if os.path.isdir("/var/tmp") else "/tmp"
        self.path = f"{base}/kernelskill-test-{secrets.token_hex(6)}.sock"
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o777)
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.sock.close()
        os.unlink(self.path)


def attack(boundary: bool) -> tuple[ChildRun, dict, str, str, Listener]:
    secret, tag = secrets.token_hex(16), f"kernelskill-attack-{secrets.token_hex(6)}"
    listener = Listener()
    cache = compile_caches()["TRITON_CACHE_DIR"]
    cache.mkdir(parents=True, exist_ok=True)
    try:
        run = run_child("boundary_judge", {"boundary": boundary, "secret": secret, "tag": tag,
                                           "socket": listener.path, "cache": str(cache),
                                           "problem": str(PROBLEM), "device": DEVICE}, DEVICE, 120.0,
                  role="judge")
    finally:
        listener.done.set()
    listener.close()
    return run, (run.payload or {}), secret, tag, listener


def _lines(log: str, what: str) -> list[str]:
    return [ln for ln in log.splitlines() if ln.startswith(f"TRY {what}")]


@needs("pid", "mount", "seccomp")
def test_the_candidate_process_reads_nothing_of_its_judge_and_reaches_nothing_of_the_host() -> None:
    cache = compile_caches()["TRITON_CACHE_DIR"]
    run, out, secret, tag, listener = attack(boundary=True)
    try:
        assert out, f"the judge did not outlive the attack: {run.crash_reason()} {run.log_tail}"
        log = out["log"]
        assert "TRY visible processes" in log, log  # the attacker ran
        assert secret not in log, log  # neither memory, environ, cmdline nor ptrace gave it away
        assert not any("attached" in ln for ln in _lines(log, "ptrace")), log
        assert listener.accepted == 0, log
        assert _lines(log, "connect") and "refused" in _lines(log, "connect")[0], log
        assert not (Path("/dev/shm") / tag).exists()
        assert not (cache / tag).exists()
        assert not (PROBLEM.parent / tag).exists()
        assert "refused" in _lines(log, "read problem")[0], log
        assert alive_with(tag) == []
    finally:
        for p in (Path("/dev/shm") / tag, cache / tag, PROBLEM.parent / tag):
            p.unlink(missing_ok=True)


@needs("pid", "mount", "seccomp")
def test_a_home_under_tmp_still_lets_the_judge_start_its_candidate(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """Containers often set HOME under /tmp: the judge's namespace then holds the home it masked
    under its private /tmp, a mount its candidate's supervisor must skip (it once failed to
    remount it, and no candidate started)."""
    if not str(tmp_path).startswith("/tmp/"):
        pytest.skip(f"the test's folder is not under /tmp here: {tmp_path}")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    run, out, secret, tag, _ = attack(boundary=True)
    try:
        assert out and "TRY visible processes" in out["log"], run.log_tail
        assert secret not in out["log"], out["log"]
    finally:
        for p in (Path("/dev/shm") / tag, compile_caches()["TRITON_CACHE_DIR"] / tag,
                  PROBLEM.parent / tag):
            p.unlink(missing_ok=True)


@needs("pid")
def test_without_the_boundary_the_same_attacker_finds_the_judges_secret() -> None:
    """The control: a dumpable judge whose candidate is its plain child, as before the boundary."""
    if os.geteuid() != 0:
        pytest.skip("reading another process's memory as a plain child needs root or ptrace_scope 0")
    run, out, secret, tag, listener = attack(boundary=False)
    try:
        assert out, run.log_tail
        assert secret in out["log"], out["log"]
    finally:
        for p in (Path("/dev/shm") / tag, compile_caches()["TRITON_CACHE_DIR"] / tag,
                  PROBLEM.parent / tag):
            p.unlink(missing_ok=True)


def test_the_report_names_the_boundary_layers() -> None:
    lines = report()
    names = [ln.split()[0] for ln in lines]
    assert "seccomp" in names and "boundary" in names
    boundary = next(ln for ln in lines if ln.startswith("boundary"))
    assert "non-dumpable" in boundary
    assert json.loads(LAYERS.to_json())["seccomp"] == LAYERS.seccomp
