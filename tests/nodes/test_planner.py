"""The planner always has a move: ranked skills (those addressing the hottest kernel's limiter
first), then untried variants of applied skills, then any template the author can apply; it stops
only when nothing left changes the best candidate, when the ranked skills are exhausted and the
best already runs within 1.5x of its floor, or when it runs within 1.1x; variants the memory calls
losers wait until nothing else is left. Pure functions, no index, no author."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kernelskill.nodes.moves import (
    Option,
    as_bottleneck,
    by_limiter,
    first_move,
    plan_round,
    target_limiter,
    variant_key,
)
from kernelskill.state.records import KernelStat, Profile


def _opt(skill_id: str, *variants: dict[str, Any], move: str = "ranked") -> Option:
    return Option(skill_id, f"why {skill_id}", move, [{}, *variants])


def _everything_differs(skill_id: str, params: dict[str, Any]) -> bool:
    return True


def test_first_move_skips_the_tried_and_the_no_ops_and_dry_runs_only_new_variants() -> None:
    options = [_opt("tried"), _opt("no-op"), _opt("useful", {"tile": 8192}, {"tile": 2048}), _opt("later")]
    asked: list[tuple[str, dict]] = []

    def differs(skill_id: str, params: dict[str, Any]) -> bool:
        asked.append((skill_id, params))
        return skill_id != "no-op"

    plan = first_move(options, {variant_key("tried", {})}, differs, cap=4)
    assert plan is not None and plan.skill_id == "useful" and plan.move == "ranked"
    assert plan.variants == [{}, {"tile": 8192}, {"tile": 2048}] and plan.params == {}
    assert ("tried", {}) not in asked  # never dry-runs what was already tried
    assert asked[0] == ("no-op", {})


def test_the_variant_cap_and_untried_variants_of_a_tried_skill() -> None:
    opt = _opt("s", {"a": 1}, {"a": 2}, {"a": 3}, {"a": 4})
    plan = first_move([opt], {variant_key("s", {})}, _everything_differs, cap=2)
    assert plan is not None and plan.variants == [{"a": 1}, {"a": 2}] and plan.params == {"a": 1}
    assert plan.all_variants() == [{"a": 1}, {"a": 2}]


def test_exhausted_ranked_skills_fall_back_to_variants_then_templates_while_far_from_the_floor() -> None:
    ranked = [_opt("ranked-one")]
    tried = {variant_key("ranked-one", {}), variant_key("in-best", {})}
    fallbacks = [_opt("in-best", {"split": "always"}, move="variant"),
                 _opt("other-template", move="template")]
    for headroom in (None, 1.51, 30.0):  # CPU (unknown) or above 1.5x its floor: never stop
        plan, why = plan_round(ranked, fallbacks, tried, _everything_differs, 4, headroom)
        assert why is None and plan is not None, headroom
        assert (plan.skill_id, plan.move, plan.variants) == ("in-best", "variant", [{"split": "always"}])
    tried.add(variant_key("in-best", {"split": "always"}))
    plan, _ = plan_round(ranked, fallbacks, tried, _everything_differs, 4, 3.0)
    assert plan is not None and (plan.skill_id, plan.move) == ("other-template", "template")


def test_it_stops_only_when_nothing_differs_or_near_the_floor_and_says_which() -> None:
    ranked, fallbacks = [_opt("r", {"x": 1})], [_opt("f", move="template")]
    plan, why = plan_round(ranked, fallbacks, set(), lambda s, p: False, 4, 8.0)
    assert plan is None and why is not None
    assert why.startswith("nothing left that changes the best candidate at 8.00x its floor")
    assert "every variant of the applied skills" in why
    plan, why = plan_round([], fallbacks, set(), _everything_differs, 4, 1.2)
    assert plan is None and "within 1.5x" in (why or "") and "1.20x" in (why or "")
    # Near the floor a ranked move is still taken: only the fallbacks are skipped.
    plan, _ = plan_round(ranked, fallbacks, set(), _everything_differs, 4, 1.2)
    assert plan is not None and plan.skill_id == "r"
    # At the floor nothing is planned, ranked moves included.
    plan, why = plan_round(ranked, fallbacks, set(), _everything_differs, 4, 1.09)
    assert plan is None and why == "the best candidate runs within 1.1x of its speed-of-light floor (1.09x)"


def test_known_losers_wait_until_no_option_has_another_move() -> None:
    ieee = {"input_precision": "ieee"}
    ranked = [_opt("tiles", ieee, {"f16_scales": "row"}), _opt("grouped", ieee)]

    def loser(skill_id: str, params: dict[str, Any]) -> bool:
        return params == ieee

    plan, _ = plan_round(ranked, [], set(), _everything_differs, 4, 3.0, loser)
    assert plan is not None and plan.skill_id == "tiles" and plan.variants == [{}, {"f16_scales": "row"}]
    tried = {variant_key("tiles", {}), variant_key("tiles", {"f16_scales": "row"})}
    plan, _ = plan_round(ranked, [], tried, _everything_differs, 4, 3.0, loser)
    assert plan is not None and (plan.skill_id, plan.variants) == ("grouped", [{}])  # not tiles' loser
    tried.add(variant_key("grouped", {}))
    plan, _ = plan_round(ranked, [], tried, _everything_differs, 4, 3.0, loser)
    assert plan is not None and (plan.skill_id, plan.variants) == ("tiles", [ieee])  # nothing else left
    tried |= {variant_key("tiles", ieee), variant_key("grouped", ieee)}
    plan, why = plan_round(ranked, [], tried, _everything_differs, 4, 3.0, loser)
    assert plan is None and (why or "").startswith("nothing left")


def _hit(skill_id: str, *bottlenecks: str) -> SimpleNamespace:
    return SimpleNamespace(id=skill_id, skill=SimpleNamespace(bottlenecks=list(bottlenecks)))


def test_the_hottest_kernels_limiter_picks_the_skill() -> None:
    kernels = [KernelStat(name="small", time_us=1.0, share=0.2, bottleneck="memory-bound"),
               KernelStat(name="hot", time_us=4.0, share=0.8, bottleneck="compute-bound")]
    profile = Profile(source="gpu", bottleneck="memory-bound", kernels=kernels)
    limiter, why = target_limiter(profile)
    assert limiter == "compute-bound" and "hot" in why and "80%" in why
    hits = [_hit("mem", "memory-bound"), _hit("both", "memory-bound", "compute-bound"),
            _hit("cmp", "compute-bound")]
    assert [h.id for h in by_limiter(hits, limiter)] == ["both", "cmp", "mem"]
    # No per-kernel class: the profile's own bottleneck; a limiter word maps onto the vocabulary.
    assert target_limiter(Profile(source="static", bottleneck="launch-bound"))[0] == "launch-bound"
    assert as_bottleneck("memory") == "memory-bound" and as_bottleneck("nonsense") is None
    unlabelled = Profile(source="gpu", bottleneck="latency-bound",
                         kernels=[KernelStat(name="k", time_us=1.0, share=1.0)])
    assert target_limiter(unlabelled)[0] == "latency-bound"
    named = unlabelled.model_copy(update={"limiter": "occupancy-limited",
                                          "limiter_rationale": "k (100%): regs"})
    assert target_limiter(named) == ("occupancy-limited", "k (100%): regs")


def test_parameters_that_lost_to_their_rounds_default_twice_under_other_skills_wait() -> None:
    from kernelskill.nodes.moves import lost_here
    from kernelskill.state.records import Attempt

    def att(rnd: int, skill: str, params: dict, ms: float | None, outcome: str = "correct",
            stage: str = "done") -> Attempt:
        return Attempt(round=rnd, node="generator", skill_id=skill, params=params, source_hash=f"{rnd}{ms}",
                       outcome=outcome, stage=stage, runtime_ms=ms)

    row = {"f16_scales": "row"}
    log = [att(1, "gemm-tile-shapes", {}, 0.866), att(1, "gemm-tile-shapes", row, 0.902),
           att(2, "gemm-grouped-tile-order", {}, 0.808), att(2, "gemm-grouped-tile-order", row, 0.884)]
    assert lost_here(log, "gemm-split-k", row)
    assert not lost_here(log, "gemm-split-k", row, timed=False)  # CPU: interpreter times rank nothing
    assert not lost_here(log[:2], "gemm-split-k", row)  # once is not yet a pattern
    assert not lost_here(log, "gemm-split-k", {})  # a skill's own default is never held back
    # Its own skill's tries do not count: there the variant is the move under test.
    assert not lost_here(log[2:] + [att(3, "gemm-split-k", {}, 0.9), att(3, "gemm-split-k", row, 0.95)],
                         "gemm-split-k", row)
    # One round where it beat its default and it is no loser.
    assert not lost_here(log + [att(3, "gemm-split-k", {}, 0.9), att(3, "gemm-split-k", row, 0.85)],
                         "gemv-bandwidth-kernel", row)
    # An incorrect try is a loss; one the author never built (stage 'author') is not judged at all.
    failed = [att(1, "a", row, None, "incorrect"), att(2, "b", row, None, "compile-error", stage="author")]
    assert not lost_here(failed, "c", row)
    assert lost_here(failed + [att(3, "b", row, None, "incorrect")], "c", row)
    assert lost_here(failed + [att(3, "b", row, None, "incorrect")], "c", row, timed=False)
