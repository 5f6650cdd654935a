"""Helpers for the sandbox tests: the probed layers, skip marks, and a child that runs code.

`child(code)` goes through run_child (the evaluator's real path) with tests/eval/sandbox_child.py,
which execs the request's code; the tests that use it request the `sandbox_child_on_path` fixture.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernelskill.eval.child import ChildRun, run_child
from kernelskill.eval.sandbox import layers as S

LAYERS = S.probe()


def needs(*layers: str) -> pytest.MarkDecorator:
    gone = [f"{n}: {LAYERS.missing.get(n, 'missing')}" for n in layers if n not in LAYERS.active()]
    return pytest.mark.skipif(bool(gone), reason="sandbox layer missing on this host: " + "; ".join(gone))


NO_OWN_POWERS = pytest.mark.skipif(not LAYERS.active() & {"uid", "caps"} and
                                   not {"pid", "mount"} <= LAYERS.namespaces,
                                   reason="neither another uid, a capability drop nor a private /proc here")


def child(code: str, timeout_s: float = 20.0, device: str = "cpu", role: str | None = None) -> ChildRun:
    """`code` run in a sandboxed child as `role` (sandbox.ROLES; by default 'child')."""
    return run_child("sandbox_child", {"code": code}, device, timeout_s, role=role)


def child_cleaning(planted: Path, code: str) -> ChildRun:
    """child(code), removing `planted` afterwards should the sandbox have let it be written."""
    try:
        return child(code)
    finally:
        existed = planted.exists()
        planted.unlink(missing_ok=True)
        assert not existed, f"the child wrote {planted}"


def alive_with(token: str) -> list[int]:
    """Live (not zombie) processes whose command line carries `token`."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmd and state != "Z":
            pids.append(int(name))
    return pids


