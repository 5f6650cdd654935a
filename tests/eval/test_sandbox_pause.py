"""Pausing a sandboxed child (eval/sandbox/pause.py): every process it started stops, a forked
and detached grandchild too, and goes on after `resume`. Side effects checked: counters the
processes write stop moving while paused. Both supervisor forms: PID 1 of a namespace, and a
subreaper where the host has no PID namespace."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernelskill.eval.sandbox import layers as S
from kernelskill.eval.sandbox.pause import pause, resume
from sandbox_util import LAYERS

COUNTERS = """
import os, time
def count(path):
    n = 0
    while True:
        n += 1
        with open(path + '.tmp', 'w') as f:
            f.write(str(n))
        os.replace(path + '.tmp', path)
        time.sleep(0.005)
if os.fork() == 0:  # detached: a new session, its parent gone
    os.setsid()
    if os.fork() == 0:
        count('grandchild')
    os._exit(0)
count('child')
"""


def _counts(d: Path) -> tuple[int, int]:
    return tuple(int((d / n).read_text() or 0) for n in ("child", "grandchild"))


def _started(d: Path, cap_s: float = 20.0) -> None:
    end = time.monotonic() + cap_s
    while time.monotonic() < end:
        if all((d / n).exists() for n in ("child", "grandchild")) and min(_counts(d)) > 3:
            return
        time.sleep(0.02)
    raise AssertionError("the sandboxed counters never started")


def _pause_and_resume(d: Path) -> None:
    run = S.sandboxed_popen([sys.executable, "-c", COUNTERS], d, "cpu", timeout_s=60,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _started(d)
        assert pause(run)
        time.sleep(0.05)  # a write already past its open finishes
        held = _counts(d)
        time.sleep(0.4)
        assert _counts(d) == held  # ~80 increments each had they run
        resume(run)
        time.sleep(0.4)
        went_on = _counts(d)
        assert went_on[0] > held[0] and went_on[1] > held[1], (held, went_on)
    finally:
        S.kill_all(run)
    assert run.returncode() == -9  # the exit status still read past the pause's answer


def test_pause_stops_every_process_of_the_child(tmp_path: Path) -> None:
    _pause_and_resume(tmp_path)


def test_pause_without_a_pid_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = S.Layers(uid=LAYERS.uid, drop_caps=LAYERS.drop_caps and not LAYERS.userns,
                     missing={"pid": "test"})
    monkeypatch.setattr(S, "probe", lambda: plain)
    _pause_and_resume(tmp_path)


def test_a_paused_then_resumed_child_reports_its_own_exit_code(tmp_path: Path) -> None:
    code = "import time; time.sleep(1.0); raise SystemExit(3)"
    run = S.sandboxed_popen([sys.executable, "-c", code], tmp_path, "cpu", timeout_s=30,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        assert pause(run)
        resume(run)
        run.proc.wait(timeout=20)
    finally:
        S.kill_all(run)
    assert run.returncode() == 3
