"""A round tries several variants of one skill: a real small problem on the CPU, through the graph
with the built-in author. The variants are judged in one evaluate_many call, each is logged with
its parameters, nothing judged beats the kept best, report.json has the round-by-round record, and
the experience statistics count the CPU tries without gains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelskill.graph.runner import run
from kernelskill.nodes import reviewer as R
from kernelskill.skill_index.stats import ExperienceStats
from kernelskill.state.graph_state import RunSettings
from kernelskill.state.records import Problem

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "problems" / "level1" / "29_cumsum.py"
PROBLEM = Problem(name="29_cumsum", path=str(PATH), source=PATH.read_text(), size="small")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def test_a_round_judges_its_variants_together_and_keeps_the_best(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[int] = []
    real = R.evaluate_many

    def counting(problem: str, sources: list[str], *a: object, **kw: object) -> list:
        batches.append(len(sources))
        return real(problem, sources, *a, **kw)

    monkeypatch.setattr(R, "evaluate_many", counting)
    settings = RunSettings(device="cpu", size="small", rounds=1, repairs=1, trials=1, variants=3,
                           baselines=False, eval_timeout_s=300)
    lines: list[str] = []
    final = run(PROBLEM, settings, "t-variants", tmp_path / "ck.sqlite", tmp_path / "out", say=lines.append)
    assert final.round == 1 and len(final.plans) == 1, (final.stop_reason, lines)
    plan = final.plans[0]
    judged = [a for a in final.attempts if a.round == 1 and a.node == "generator" and a.stage != "author"]
    assert len(judged) >= 2 and batches == [len(judged)], (batches, lines)
    assert all(a.skill_id == plan.skill_id for a in judged)
    assert len({json.dumps(a.params, sort_keys=True) for a in judged}) == len(judged)  # one per variant
    assert all(a.params in plan.all_variants() for a in judged)
    # The kept best is correct and is one of the judged sources (the first candidate or a variant).
    # Which one wins is CPU-interpreter timing here, so it is not asserted: the pick rule itself is
    # tested on fixed numbers (tests/nodes/test_reviewer_batch.py).
    assert final.best is not None and final.best_verdict is not None and final.best_verdict.correct
    assert any(a.source_hash == final.best.hash and a.outcome == "correct" for a in final.attempts)
    assert sum(1 for ln in lines if ln.startswith("reviewer:")) == 2  # the first candidate, the round
    # report.json: each round's choice, variants with their parameters, outcome, runtime and effect.
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    rounds = report["per_round"]
    assert [r["round"] for r in rounds] == [0, 1]
    r1 = rounds[1]
    assert r1["skill"] == plan.skill_id and r1["reason"] and r1["move"] == plan.move
    assert [v["params"] for v in r1["variants"] if v["stage"] != "author"] == [a.params for a in judged]
    assert r1["variants_planned"] == plan.all_variants()
    assert all(v["outcome"] and "runtime_ms" in v for v in r1["variants"])
    assert r1["effect"] is None and r1["timing"].startswith("cpu")  # interpreter timings are no speed
    assert report["attempts"] and report["rounds"] == 1  # the existing fields stay
    # Memory: one try per variant, recorded on the CPU: tries, never wins or gains.
    rows = [r for r in ExperienceStats(tmp_path / "cache" / "kernelskill" / "skill_stats.json").records()
            if r.skill_id == plan.skill_id]
    assert sum(r.tries for r in rows) == len(judged) and all(r.gpu == "cpu" and r.wins == 0 for r in rows)
    assert {r.variant for r in rows} == {json.dumps(a.params, sort_keys=True, separators=(",", ":"))
                                        for a in judged}
