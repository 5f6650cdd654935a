"""The planner's pure choice: the first ranked skill that is new to this task and would change
the best candidate; the (possibly costly) applicability check runs only for such skills."""

from __future__ import annotations

from types import SimpleNamespace

from kernelskill.nodes.planner import choose


def _hit(skill_id: str) -> SimpleNamespace:
    return SimpleNamespace(id=skill_id, title=skill_id, score=1.0, reason="test")


def test_choose_skips_the_best_the_tried_and_the_no_ops_in_rank_order() -> None:
    hits = [_hit(s) for s in ("in-best", "tried", "no-op", "useful", "later")]
    asked: list[str] = []

    def can_apply(skill_id: str) -> bool:
        asked.append(skill_id)
        return skill_id != "no-op"

    plan = choose(hits, {("tried", "[]")}, can_apply, {"in-best"})
    assert plan is not None and plan.skill_id == "useful"
    assert asked == ["no-op", "useful"]  # never dry-runs what is in the best or already tried
    assert choose(hits[:3], {("tried", "[]")}, can_apply, {"in-best"}) is None
