"""A byte-identical candidate is judged once per thread; "new best" needs a gain above the measured
noise; CPU attempts carry no speedups (in the state and in report.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kernelskill.eval.timing.protocol import relative_spread
from kernelskill.graph.runner import run
from kernelskill.nodes.reviewer import is_better, known_baselines, timing_mode
from kernelskill.state.graph_state import GraphState, RunSettings, Verdict
from kernelskill.state.records import Attempt, Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good, wrong_scale  # noqa: E402

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def test_a_repeated_source_is_not_evaluated_again_and_cpu_attempts_have_no_speedups(tmp_path: Path) -> None:
    # The repair of a wrong candidate comes back byte-identical: judged once, then the planner moves on
    # (with a repair left, it would otherwise go back to the repairer).
    script = [good(1024), wrong_scale(), wrong_scale(), good(512)]
    settings = RunSettings(device="cpu", size="small", author="scripted", variants=1, rounds=2, repairs=2,
                           trials=2, baselines=True, eval_timeout_s=120, script=script)
    lines: list[str] = []
    final = run(PROBLEM, settings, "t-repeat", tmp_path / "ck.sqlite", tmp_path / "out", say=lines.append)
    a = final.attempts
    assert [x.repeat_of for x in a[:4]] == [None, None, 1, None], [x.model_dump() for x in a]
    assert [x.node for x in a[:4]] == ["generator", "generator", "repairer", "generator"]
    assert a[2].outcome == "incorrect" and a[3].round == 2 and a[3].outcome == "correct"
    assert sum(ln.startswith("reviewer: correct") for ln in lines) == 2
    assert sum(ln.startswith("reviewer: rejected") for ln in lines) == 1  # three evaluations, not four
    assert any("repeat of attempt 1" in ln for ln in lines)
    a = [x for x in a if x.stage != "author"]
    assert all(x.eager_ms for x in a if x.outcome == "correct")  # eager was timed (CPU) ...
    assert all(x.speedup_vs_eager is None and x.speedup_vs_compile is None for x in a)  # ... no speedups
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert all(r["speedup_vs_eager"] is None for r in report["attempts"])
    assert report["attempts"][2]["repeat_of"] == 1


def _v(ms: float, noise: float | None = None, cpu: bool = False) -> Verdict:
    return Verdict(correct=True, stage="done", runtime_ms=ms, noise=noise, timing_is_cpu=cpu)


def test_new_best_needs_a_gain_above_the_measured_noise() -> None:
    assert is_better(_v(0.95), _v(1.0), min_gain=1.02)  # 5 % faster, no noise measured
    assert not is_better(_v(0.95, noise=0.08), _v(1.0, noise=0.01), min_gain=1.02)  # inside 8 % spread
    assert not is_better(_v(0.95, noise=0.01), _v(1.0, noise=0.07), min_gain=1.02)  # the best was noisy
    assert is_better(_v(0.80, noise=0.08), _v(1.0, noise=0.05), min_gain=1.02)
    assert not is_better(_v(0.99), _v(1.0), min_gain=1.02)


def test_cpu_timings_rank_nothing() -> None:
    """Under the interpreter the first correct candidate stays the best, however much faster a
    later one ran there: the delivered CPU solution does not depend on the interpreter's noise."""
    assert is_better(_v(5.0, cpu=True), None, min_gain=1.02)
    assert not is_better(_v(0.5, cpu=True), _v(1.0, cpu=True), min_gain=1.02)
    assert is_better(_v(5.0, cpu=True), Verdict(correct=False, stage="correctness"), min_gain=1.02)


def test_spread_is_the_interquartile_range_over_the_median() -> None:
    assert relative_spread([1.0, 1.0, 1.0, 1.0], 1.0) == 0.0
    assert relative_spread([1.0], 1.0) == 0.0
    assert relative_spread([0.9, 1.0, 1.0, 1.1, 1.2], 1.0) == pytest.approx(0.1)


def test_the_first_evaluation_is_full_and_later_ones_rank_against_its_baselines() -> None:
    state = GraphState(problem=PROBLEM, settings=RunSettings(device="cuda"))
    assert timing_mode(state) == "full" and known_baselines(state) is None
    no_source = Attempt(round=0, node="generator", source_hash="x", outcome="compile-error", stage="author")
    assert timing_mode(state.model_copy(update={"attempts": [no_source]})) == "full"  # nothing judged yet
    judged = Attempt(round=0, node="generator", source_hash="y", outcome="correct", stage="done")
    later = state.model_copy(update={"attempts": [judged], "baselines": [4.0, 3.0]})
    assert timing_mode(later) == "rank" and known_baselines(later) == [4.0, 3.0]
    without = later.model_copy(update={"settings": RunSettings(device="cuda", baselines=False)})
    assert known_baselines(without) is None
