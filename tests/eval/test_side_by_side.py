"""A round's candidates judged side by side (eval/batch.py): in order, each verdict the one it
gets alone; a turn is given only once every judge still running is parked with its candidate
paused; a judge whose pause failed is ended and its candidate judged again by itself."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kernelskill.eval import batch
from kernelskill.eval.api import evaluate_many
from kernelskill.eval.child import ChildRun
from kernelskill.eval.types import EvalOptions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good, wrong_scale  # noqa: E402

RANK = EvalOptions(device="cpu", size="small", trials=2, timeout_s=180, baselines=False, timing_mode="rank")


def test_side_by_side_verdicts_in_order() -> None:
    problem = (FIXTURES / "relu_scale.py").read_text()
    static_reject = good().replace("import torch\n", "import torch\nimport subprocess\n", 1)
    sources = [good(1024), wrong_scale(), static_reject, good(512)]
    out = evaluate_many(problem, sources, RANK, parallel=3)
    assert [r.correct for r in out] == [True, False, False, True], [(r.stage, r.reason) for r in out]
    assert out[1].stage == "correctness" and out[2].stage == "static"
    for r in (out[0], out[3]):  # parked, then timed at their turn
        assert r.runtime_ms is not None and "timing.gate" in r.stage_seconds, r.stage_seconds
        assert not r.contended


def test_width_rules() -> None:
    assert batch.width(RANK, 3) == 3
    assert batch.width(RANK, 1) == 1
    first = EvalOptions(device="cpu", baselines=True)  # a thread's first evaluation times the baselines
    assert batch.width(first, 3) == 1
    gpu = EvalOptions(device="cuda", baselines=False, work=[1e9, 4e9])
    assert batch.width(gpu, 3) in (1, 2, 3)  # NVML decides; without it, one
    unknown = EvalOptions(device="cuda", baselines=False)
    assert batch.width(unknown, 3) == 1


@dataclass
class FakeProc:
    done: bool = False

    def poll(self) -> int | None:
        return 0 if self.done else None


@dataclass
class FakeRun:
    proc: FakeProc = field(default_factory=FakeProc)


class FakeJudge:
    """A judge as _wave sees it: its mark file, its process, finish() and discard()."""

    def __init__(self, tmp: Path, i: int, log: list[str], marks: dict[int, list[str]]) -> None:
        self.i, self.log, self.marks = i, log, marks
        self.dir = tmp / str(i)
        self.dir.mkdir()
        self.run = FakeRun()

    def tick(self) -> None:
        if self.marks[self.i]:
            (self.dir / "gate").write_text(self.marks[self.i].pop(0))

    def finish(self, request: dict, timeout_s: float) -> ChildRun:
        self.log.append(f"turn {self.i}")
        return ChildRun({"i": self.i}, "done", "", False, 0, 0.0)

    def discard(self) -> None:
        self.log.append(f"discard {self.i}")


def test_a_turn_waits_for_every_judge_to_park(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    # Judge 0 parks at once, judge 1 after three polls, judge 2 reports its pause failed.
    marks = {0: ["paused"], 1: ["", "", "", "paused"], 2: ["alone"]}
    judges: dict[int, FakeJudge] = {}

    def start(module: str, device: str, timeout_s: float, spare: bool, req: dict) -> FakeJudge:
        assert req["gated"] is True and req["deadline_unix"] > 0
        i = len(judges)
        judges[i] = FakeJudge(tmp_path, i, log, marks)
        return judges[i]

    def sleep(_: float) -> None:
        log.append("poll")
        for j in judges.values():
            j.tick()

    monkeypatch.setattr(batch.child, "_start", start)
    monkeypatch.setattr(batch.time, "sleep", sleep)
    out = batch.judge_side_by_side([{}, {}, {}], "cpu", 60.0, 3)
    assert [r.payload if r else None for r in out] == [{"i": 0}, {"i": 1}, None]
    turns = [e for e in log if e != "poll"]
    assert turns == ["discard 2", "turn 0", "turn 1"], log
    # No turn before judge 1 parked (its fourth mark): three polls first.
    assert log.index("turn 0") > 3 and log[:log.index("turn 0")].count("poll") >= 4, log
