"""The author tests' fork server (candidate_zygote.py) starts candidates as judge_link does: the
forked process answers the protocol from the scratch folder in its own session, and the link's
close leaves nothing behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from candidate_zygote import ForkedProc, Zygote
from kernelskill.eval.judge.link import CandidateLink


def test_a_forked_candidate_answers_from_its_scratch_and_dies_with_its_link(
        candidate_fork_server: Zygote | None, tmp_path: Path) -> None:
    if candidate_fork_server is None:
        pytest.skip("KS_TEST_FRESH_CANDIDATES=1: every candidate starts afresh")
    link = CandidateLink("cpu", time.monotonic() + 120)
    pid = link.proc.pid
    assert isinstance(link.proc, ForkedProc)
    assert link.request({"cmd": "ping"}) == {"ok": True}
    assert os.readlink(f"/proc/{pid}/cwd") == str(link.scratch)
    assert os.getsid(pid) == pid  # its own session: the link's killpg reaches all it started
    link.close()
    assert link.proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not link.scratch.exists()
