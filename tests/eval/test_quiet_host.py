"""Before the candidate's timed runs the judge waits for the baseline process's background imports
(torch.compile's stack, seconds of a core) to end: `settle` (eval/judge/timing_stage.quiet_host)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kernelskill.eval.candidate.main import Candidate
from kernelskill.eval.judge import parent_pipe
from kernelskill.eval.judge.timing_stage import quiet_host
from kernelskill.eval.types import Rejected


class FakeLink:
    def __init__(self, dead: bool = False):
        self.sent: list[dict[str, Any]] = []
        self.dead = dead

    def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(msg)
        if self.dead:
            raise Rejected("timing", "candidate process died (signal SIGKILL) during timing", "crash")
        return {"ok": True}


def test_settle_replies_only_after_the_background_imports() -> None:
    order: list[str] = []
    cand = Candidate(sock=None, warm=SimpleNamespace(wait=lambda: order.append("imports done")))
    assert cand.settle({"cmd": "settle"}, []) == {"ok": True}
    assert order == ["imports done"]
    assert Candidate(sock=None).settle({"cmd": "settle"}, []) == {"ok": True}  # nothing importing


def test_the_judge_settles_the_baseline_process_before_timing(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(parent_pipe, "_attached", [])
    link = FakeLink()
    quiet_host(SimpleNamespace(baseline_link=link, device="cpu", req={}))
    assert link.sent == [{"cmd": "settle"}]
    quiet_host(SimpleNamespace(baseline_link=None, device="cpu", req={}))  # rank timing: no such process


def test_a_dead_baseline_process_is_left_to_the_baselines_fallback(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(parent_pipe, "_attached", [])
    link = FakeLink(dead=True)
    quiet_host(SimpleNamespace(baseline_link=link, device="cpu", req={}))  # no raise: timing goes on
    assert link.sent == [{"cmd": "settle"}]
