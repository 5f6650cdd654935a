"""The out folder never holds a report that reads as finished when the run was not: a new best
written mid-run says so, an interrupt during finalize leaves a report naming the signal and the
resume command, and the resumed run's report is the finished one. Files are written whole."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernelskill.graph import build
from kernelskill.graph.runner import MID_RUN, run
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.output import plural, write_atomic
from kernelskill.state.records import Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good  # noqa: E402

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")
SETTINGS = RunSettings(device="cpu", size="small", author="scripted", script=[good(1024)], rounds=0,
                       repairs=0, trials=2, baselines=False, eval_timeout_s=120)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def test_an_interrupt_in_finalize_leaves_a_report_that_says_so(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db, out = tmp_path / "ck.sqlite", tmp_path / "out"
    mid_run: list[dict] = []

    def say(line: str) -> None:
        if "-> new best" in line:  # written just before this line was said
            mid_run.append(json.loads((out / "report.json").read_text()))

    def killed(state: GraphState) -> dict:
        raise KeyboardInterrupt("SIGTERM")  # what cli.main raises on SIGTERM

    monkeypatch.setattr(build, "finalize", killed)
    with pytest.raises(KeyboardInterrupt):
        run(PROBLEM, SETTINGS, "t-int", db, out, say=say)
    assert mid_run and mid_run[0]["stop_reason"] == MID_RUN and mid_run[0]["finished"] is False
    report = json.loads((out / "report.json").read_text())
    assert report["stop_reason"] == "interrupted by SIGTERM before the run ended"
    assert report["finished"] is False and "--thread t-int" in report["resume_command"]
    assert "# verified for: relu_scale" in (out / "solution.py").read_text()  # the best so far
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "solution.py"]  # no temp file left

    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    final = run(PROBLEM, SETTINGS, "t-int", db, out, say=lambda line: None)
    report = json.loads((out / "report.json").read_text())
    assert final.stop_reason and report["stop_reason"] == final.stop_reason
    assert report["finished"] is True and report["resume_command"] is None


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    write_atomic(target, "old")

    def interrupted(src: str, dst: str) -> None:
        assert Path(src).read_text() == "new" and Path(dst).read_text() == "old"  # written beside it
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_counts_are_plural_only_when_not_one() -> None:
    assert [plural(n, "round") for n in (0, 1, 2)] == ["0 rounds", "1 round", "2 rounds"]
    assert plural(1, "launch", "launches") == "1 launch" and plural(3, "launch", "launches") == "3 launches"
