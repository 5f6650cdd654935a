"""The planner ranks skills by what their code does to the target kernel, not by the bottleneck word
they declare: on an H100 (2026-12-07) level3/05's rounds 1 and 4 applied GEMM skills "addressing
the limiter" of its depthwise kernel, which they left byte-identical. Pure functions, then the
planner node with a fake index and author."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kernelskill.authors.base import Author, AuthorTask
from kernelskill.nodes import limiter as L
from kernelskill.nodes import planner as P
from kernelskill.nodes.moves import Option, aim, by_target, first_untried, variant_key
from kernelskill.state.graph_state import GraphState, RunSettings
from kernelskill.state.records import Attempt, Candidate, KernelStat, Problem, Profile

DW = "_dwconv_kernel_6"


def _opt(skill_id: str) -> Option:
    return Option(skill_id, f"why {skill_id}")


def test_by_target_puts_the_touching_first_then_the_unknown_then_the_rest_in_rank_order() -> None:
    options = [_opt(s) for s in ("gemm", "dw-a", "vendor", "gemm-2", "dw-b", "unasked")]
    touched = {"gemm": False, "dw-a": True, "vendor": None, "gemm-2": False, "dw-b": True}
    assert [o.skill_id for o in by_target(options, touched)] == ["dw-a", "dw-b", "vendor", "unasked", "gemm",
                                                                   "gemm-2"]
    assert by_target(options, {}) == options


def test_the_reason_claims_the_limiter_only_where_the_code_does_not_deny_it() -> None:
    why = f"{DW} (33% of GPU time): ..."
    assert aim("memory-bound", why, ["memory-bound"], DW, True) == \
        f"; changes the target kernel {DW} and addresses its limiter ({why})"
    assert aim("memory-bound", why, [], DW, True) == f"; changes the target kernel {DW}"
    assert aim("memory-bound", why, ["memory-bound"], DW, False) == \
        f"; declares the limiter memory-bound but leaves the target kernel {DW} as it is"
    assert aim("memory-bound", why, [], DW, False) == ""
    assert aim("memory-bound", why, ["memory-bound"], None, None) == f"; addresses the limiter ({why})"


def test_first_untried_is_the_variant_a_round_would_try_first() -> None:
    vs: list[dict[str, Any]] = [{}, {"tile": 1024}]
    assert first_untried("s", vs, set()) == {}
    assert first_untried("s", vs, {variant_key("s", {})}) == {"tile": 1024}
    assert first_untried("s", vs, {variant_key("s", v) for v in vs}) is None


def test_set_limiters_names_the_target_kernel_and_old_profiles_load_without_it() -> None:
    p = Profile(source="gpu", bottleneck="memory-bound", kernels=[
        KernelStat(name="void at::native::vectorized_elementwise_kernel<4, float>(int, float*)", time_us=1.0,
                   share=0.2),
        KernelStat(name=DW, time_us=4.0, share=0.8)])
    L.set_limiters(p)
    assert p.target_kernel == DW
    p.kernels[0].share = 0.9
    L.set_limiters(p)
    assert p.target_kernel == "vectorized_elementwise_kernel"  # the bare name, as ncu filters on
    p.kernels = []
    L.set_limiters(p)
    assert p.target_kernel is None
    old = Profile(source="gpu", bottleneck="memory-bound").model_dump()
    del old["target_kernel"]
    assert Profile.model_validate(old).target_kernel is None


# ---- the planner node --------------------------------------------------------------------------------
class FakeIndex:
    """Hits in rank order; every skill has the variants [{}, {"v": 2}]."""

    def __init__(self, hits: list[SimpleNamespace]):
        self.hits = hits

    def query(self, profile: Profile, **kw: Any) -> list[SimpleNamespace]:
        return self.hits

    def variants(self, skill_id: str, structures: Any = (), gpu: str | None = None) -> list[dict[str, Any]]:
        return [{}, {"v": 2}]

    def allowed(self, **kw: Any) -> list[Any]:
        return []

    def known_loser(self, skill_id: str, params: dict[str, Any], structures: Any = (),
                    gpu: str | None = None) -> bool:
        return False


class FakeAuthor(Author):
    """Every skill changes the best; `verdicts` says which change the target kernel."""

    name = "fake"

    def __init__(self, verdicts: dict[str, bool | None]):
        self.verdicts = verdicts
        self.asked: list[tuple[str, dict[str, Any], str]] = []

    def can_apply(self, skill_id: str, task: AuthorTask | None = None,
                  params: dict[str, Any] | None = None) -> bool:
        return True

    def touches(self, skill_id: str, task: AuthorTask, params: dict[str, Any] | None,
                kernel: str) -> bool | None:
        self.asked.append((skill_id, dict(params or {}), kernel))
        return self.verdicts.get(skill_id)


def _hit(skill_id: str, score: float, *bottlenecks: str) -> SimpleNamespace:
    return SimpleNamespace(id=skill_id, title=skill_id, score=score, reason="matched",
                           skill=SimpleNamespace(bottlenecks=list(bottlenecks)))


def _state(target: str | None, attempts: tuple[Attempt, ...] | list[Attempt] = ()) -> GraphState:
    profile = Profile(source="gpu", bottleneck="memory-bound", limiter="memory-bound", target_kernel=target,
                      limiter_rationale=f"{target} (33% of GPU time): DRAM-bound")
    return GraphState(problem=Problem(name="p", path="p.py", source=""), settings=RunSettings(rounds=6),
                      best=Candidate(source="x = 1\n"), profile=profile, attempts=list(attempts))


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    hits = [_hit("conv-implicit-gemm", 0.9, "memory-bound", "compute-bound"),
            _hit("pointwise-conv-as-gemm", 0.8), _hit("depthwise-tiles", 0.7),
            _hit("fuse-elementwise-chain", 0.6, "memory-bound")]
    author = FakeAuthor({"conv-implicit-gemm": False, "pointwise-conv-as-gemm": False,
                         "depthwise-tiles": True})  # fuse-elementwise-chain: unknown
    monkeypatch.setattr(P, "get_index", lambda: FakeIndex(hits))
    monkeypatch.setattr(P, "get_author", lambda settings: author)
    return author


def test_a_skill_matching_the_limiter_word_but_not_the_target_goes_after_one_that_touches_it(
        planned: FakeAuthor) -> None:
    plan = P.planner(_state(DW))["plan"]
    assert plan is not None and plan.skill_id == "depthwise-tiles"
    assert plan.reason.endswith(f"; changes the target kernel {DW}")
    # One dry run per ranked skill, on its first untried variant, for the target kernel.
    assert [a[0] for a in planned.asked] == ["conv-implicit-gemm", "fuse-elementwise-chain",
                                             "pointwise-conv-as-gemm", "depthwise-tiles"]
    assert all(params == {} and kernel == DW for _, params, kernel in planned.asked)
    # Once it is tried: the unknown before the limiter-word match that leaves the kernel as it is.
    done = [Attempt(round=1, node="generator", skill_id="depthwise-tiles", params=v, source_hash="h",
                    outcome="correct") for v in ({}, {"v": 2})]
    plan = P.planner(_state(DW, done))["plan"]
    assert plan is not None and plan.skill_id == "fuse-elementwise-chain"
    assert "addresses the limiter" in plan.reason
    more = [Attempt(round=2, node="generator", skill_id="fuse-elementwise-chain", params=v, source_hash="h",
                    outcome="incorrect") for v in ({}, {"v": 2})]
    plan = P.planner(_state(DW, done + more))["plan"]
    assert plan is not None and plan.skill_id == "conv-implicit-gemm"
    assert "addresses the limiter" not in plan.reason
    assert plan.reason.endswith(f"declares the limiter memory-bound but leaves the target kernel {DW} "
                                "as it is")


def test_without_a_target_kernel_the_limiter_word_orders_and_no_dry_run_is_asked(planned: FakeAuthor) -> None:
    plan = P.planner(_state(None))["plan"]
    assert plan is not None and plan.skill_id == "conv-implicit-gemm"
    assert "addresses the limiter" in plan.reason
    assert planned.asked == []


def test_an_applied_skills_variant_that_changes_the_target_goes_before_ranked_skills_that_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    hits = [_hit("conv-implicit-gemm", 0.9, "memory-bound"), _hit("pointwise-conv-as-gemm", 0.8)]
    author = FakeAuthor({"conv-implicit-gemm": False, "pointwise-conv-as-gemm": False,
                         "depthwise-direct": True})
    monkeypatch.setattr(P, "get_index", lambda: FakeIndex(hits))
    monkeypatch.setattr(P, "get_author", lambda settings: author)
    state = _state(DW)
    state.best = Candidate(source="x = 1\n", author_state={"templates": ["depthwise-direct"]})
    plan = P.planner(state)["plan"]
    assert plan is not None and (plan.skill_id, plan.move) == ("depthwise-direct", "variant")
    assert plan.reason.endswith(f"; changes the target kernel {DW}")
    # Where its variant leaves the target as it is, it waits for the ranked skills, as before.
    author.verdicts["depthwise-direct"] = False
    plan = P.planner(state)["plan"]
    assert plan is not None and (plan.skill_id, plan.move) == ("conv-implicit-gemm", "ranked")
    # No target kernel: no dry run, and the applied skill is a fallback.
    author.asked.clear()
    plan = P.planner(_state(None))["plan"]
    assert plan is not None and plan.skill_id == "conv-implicit-gemm" and author.asked == []


def test_among_applied_skills_that_change_the_target_the_one_that_wrote_it_goes_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    author = FakeAuthor({"channels-last-layout": True, "depthwise-direct": True})
    monkeypatch.setattr(P, "get_index", lambda: FakeIndex([]))
    monkeypatch.setattr(P, "get_author", lambda settings: author)
    state = _state(DW)
    templates = ["channels-last-layout", "depthwise-direct"]
    state.best = Candidate(source="x = 1\n", author_state={
        "templates": templates, "kernel_skills": {DW: "depthwise-direct", "_cv": "channels-last-layout"}})
    plan = P.planner(state)["plan"]
    assert plan is not None and (plan.skill_id, plan.move) == ("depthwise-direct", "variant")
    # Without the map (an older checkpoint), the best's template order decides, as before.
    state.best = Candidate(source="x = 1\n", author_state={"templates": templates})
    plan = P.planner(state)["plan"]
    assert plan is not None and plan.skill_id == "channels-last-layout"


def test_a_variant_that_lost_to_its_rounds_default_under_two_other_skills_waits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    author = FakeAuthor({})
    monkeypatch.setattr(P, "get_index", lambda: FakeIndex([_hit("s3", 0.9)]))
    monkeypatch.setattr(P, "get_author", lambda settings: author)

    def att(rnd: int, skill: str, params: dict[str, Any], ms: float) -> Attempt:
        return Attempt(round=rnd, node="generator", skill_id=skill, params=params, source_hash=f"{skill}{ms}",
                       outcome="correct", stage="done", runtime_ms=ms)

    lost = [att(1, "s1", {}, 0.86), att(1, "s1", {"v": 2}, 0.90),
            att(2, "s2", {}, 0.81), att(2, "s2", {"v": 2}, 0.88)]
    plan = P.planner(_state(None, lost))["plan"]
    assert plan is not None and plan.skill_id == "s3" and plan.variants == [{}]  # {"v": 2} waits
    plan = P.planner(_state(None, lost[:2]))["plan"]  # one loss: still tried
    assert plan is not None and plan.variants == [{}, {"v": 2}]
