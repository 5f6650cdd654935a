"""Repairs never go round in circles: a repeated source or a repeated error moves the repair one
fallback level down, and the last level is the reference verbatim, so a run whose reference runs
never ends without a correct candidate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kernelskill.graph.runner import run
from kernelskill.nodes.finalize import solution_choice
from kernelskill.nodes.repairer import LAST_RESORT, REFERENCE, fallback_level, repairer, repeats_a_failure
from kernelskill.state.author_state import AuthorState
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Attempt, Candidate, Problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from candidates import good, syntax_error, wrong_scale  # noqa: E402

PROBLEM = Problem(name="relu_scale", path=str(FIXTURES / "relu_scale.py"),
                  source=(FIXTURES / "relu_scale.py").read_text(), size="small")
# ModelNew that loses an attribute the forward needs: the same error whatever else changes.
LOST = "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n" \
       "    def __init__(self, cols):\n        super().__init__()\n" \
       "    def forward(self, x):\n        return x * self.scale\n"


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kernelskill.nodes.runtime import set_config
    from kernelskill.state.config import KernelSkillConfig

    set_config(KernelSkillConfig())


def _run(tmp_path: Path, script: list[str], repairs: int = 3) -> GraphState:
    settings = RunSettings(device="cpu", size="small", author="scripted", rounds=0, repairs=repairs, trials=1,
                           baselines=False, eval_timeout_s=120, script=script)
    return run(PROBLEM, settings, "t", tmp_path / "ck.sqlite", tmp_path / "out", say=lambda _: None)


def test_a_repair_that_returns_the_same_source_ends_on_the_reference(tmp_path: Path) -> None:
    final = _run(tmp_path, [syntax_error()] * 10)
    sources = [a.source_hash for a in final.attempts if a.repeat_of is None and a.stage != "author"]
    assert len(sources) == len(set(sources)), "a source was evaluated twice"
    assert final.best is not None and final.best.author == "reference" and final.best_verdict.correct
    first = final.attempts
    # generator, a repeat (-> last resort), a repeat (-> the reference), the reference
    assert [a.node for a in first] == ["generator", "repairer", "repairer", "repairer"], first
    assert [a.repeat_of for a in first] == [None, 0, 0, None]
    source, is_reference, why = solution_choice(final)
    assert is_reference and "no correct candidate of ours" in why


def test_the_same_error_from_new_sources_moves_down_a_level_each_time(tmp_path: Path) -> None:
    script = [LOST + f"# variant {i}\n" for i in range(10)]
    final = _run(tmp_path, script, repairs=8)
    first = final.attempts
    nodes = [(a.node, a.outcome) for a in first]
    # generator fails; repair 1 (author) repeats the error -> repair 2 is the last resort, which
    # repeats it too -> repair 3 is the reference. Eight repairs were allowed; three were used.
    assert len(first) == 4 and nodes[-1] == ("repairer", "correct"), nodes
    assert final.best is not None and final.best.author == "reference"


def test_a_spent_budget_without_a_correct_candidate_still_ends_correct(tmp_path: Path) -> None:
    final = _run(tmp_path, [wrong_scale(1024), wrong_scale(512), wrong_scale(256)], repairs=1)
    assert final.best is not None and final.best.author == "reference" and final.best_verdict.correct


def test_a_correct_repair_is_kept_and_the_reference_is_not_needed(tmp_path: Path) -> None:
    final = _run(tmp_path, [syntax_error(), good()])
    assert final.best is not None and final.best.author == "scripted"


def _att(node: str, error: str | None, repeat_of: int | None = None, outcome: str = "incorrect") -> Attempt:
    return Attempt(round=1, node=node, source_hash=node + str(error), outcome=outcome, error=error,
                   stage="correctness", repeat_of=repeat_of)


def test_levels_are_a_pure_function_of_the_attempts() -> None:
    s = RunSettings(repairs=3)
    cand = Candidate(source="x")
    fresh = [_att("generator", "[compile] a"), _att("repairer", "[compile] b")]
    assert not repeats_a_failure(fresh)
    assert fallback_level(GraphState(problem=PROBLEM, settings=s, candidate=cand, attempts=fresh,
                                     repairs=1)) == 0
    again = [*fresh, _att("repairer", "[compile] a\nanother tail")]
    assert repeats_a_failure(again)
    assert fallback_level(GraphState(problem=PROBLEM, settings=s, candidate=cand, attempts=again,
                                     repairs=2)) == LAST_RESORT
    deeper = cand.model_copy(update={"author_state": AuthorState(fallback_level=LAST_RESORT)})
    assert fallback_level(GraphState(problem=PROBLEM, settings=s, candidate=deeper, attempts=again,
                                     repairs=2)) == REFERENCE
    # An error seen before the generator's newest candidate belongs to another lineage.
    other = [_att("generator", "[compile] a"), _att("generator", "[compile] c"),
             _att("repairer", "[compile] a")]
    assert not repeats_a_failure(other)
    assert repeats_a_failure([_att("generator", "[compile] a"), _att("repairer", None, repeat_of=0)])
    spent = GraphState(problem=PROBLEM, settings=s, candidate=cand, attempts=fresh, repairs=3)
    assert fallback_level(spent) == REFERENCE
    assert fallback_level(spent.model_copy(update={"best": Candidate(source="y")})) == 0


def test_with_a_correct_best_the_lowest_level_ends_the_lineage_instead() -> None:
    s = RunSettings(repairs=3)
    deeper = Candidate(source="x", author_state={"fallback_level": LAST_RESORT})
    again = [_att("generator", "[compile] a"), _att("repairer", "[compile] a")]
    alone = repairer(GraphState(problem=PROBLEM, settings=s, candidate=deeper, attempts=again, repairs=2))
    assert alone["candidate"].author == "reference"
    kept = repairer(GraphState(problem=PROBLEM, settings=s, candidate=deeper, attempts=again, repairs=2,
                               best=Candidate(source="y")))
    assert kept["candidate"] is None and kept["repairs"] == 3
    assert "every fallback level" in kept["attempts"][0].error
