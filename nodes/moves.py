"""The planner's choice as pure functions: which skill addresses the target kernel's limiter (the
hottest kernel, or the hot one with the most time to give back where the hottest runs near its peak:
nodes/limiter.py), and which move a round makes (a skill and the variants of it to try), in three
tiers:

1. ranked: the skill index's hits for this profile, those addressing the target kernel's limiter
   first, skipping skills already applied (in the best candidate, or tried on this task). Where the
   profile names the target kernel, the author's dry run of each hit's first untried variant then
   orders them: those that change that kernel or its launch first, then the unknown, then those
   that leave it as it is (a matching bottleneck word is no evidence the code reaches the kernel).
   An applied skill whose next variant changes the target kernel ranks with those that do;
2. variant: untried variants of the other skills already applied (those in the best included);
3. template: any other template skill the author can apply under the run's policy.

A move is a skill with at least one untried variant whose code differs from the best candidate.
"Nothing left" is said only when every tier is exhausted, when the ranked skills are and the
best candidate already runs within NEAR_FLOOR of its speed-of-light floor, or when it runs within
AT_FLOOR of it (no move can give back more than the timing's noise). On a CPU no floor is
measured (headroom None): the headroom is unknown, so the fallbacks are tried while rounds remain.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ..state.records import Plan, Profile
from ..state.vocab import BOTTLENECKS
from .runoff import RUN_OFF

NEAR_FLOOR = 1.5
"""Headroom (runtime / floor) at or below which running out of ranked skills may end the run."""
AT_FLOOR = 1.1
"""Headroom at or below which no round is planned: what is left is about the judge's noise (H100,
level1/05's matrix-vector product at 1.09x its floor spent five rounds, 180 s, on nothing)."""


def as_bottleneck(word: str | None) -> str | None:
    """A limiter in the bottleneck vocabulary ('memory' -> 'memory-bound'), None if unknown."""
    if not word:
        return None
    if word in BOTTLENECKS:
        return word
    return next((b for b in BOTTLENECKS if b.startswith(word.lower())), None)


def target_limiter(profile: Profile) -> tuple[str | None, str]:
    """(limiter, why): the target kernel's limiter where the profiler named it (nodes/limiter.py);
    else the hottest kernel's (by share of GPU time) limiter or bottleneck class when the profile
    says; the whole profile's bottleneck otherwise."""
    top = as_bottleneck(getattr(profile, "limiter", None))
    if top:  # the profiler named the target kernel's limiter (nodes/limiter.py)
        return top, getattr(profile, "limiter_rationale", "") or f"the hottest kernel is {top}"
    if profile.kernels:
        k = max(profile.kernels, key=lambda k: k.share)
        found = as_bottleneck(getattr(k, "limiter", None)) or k.bottleneck
        if found:
            return found, f"hottest kernel {k.name} ({k.share:.0%} of GPU time) is {found}"
    return profile.bottleneck, f"the profile is {profile.bottleneck}"


def by_limiter(hits: list[Any], limiter: str | None) -> list[Any]:
    """Hits whose skill addresses `limiter` first, rank order kept within each group."""
    def addresses(hit: Any) -> bool:
        skill = getattr(hit, "skill", None)
        return limiter is not None and limiter in getattr(skill, "bottlenecks", ())
    return sorted(hits, key=lambda h: not addresses(h))


@dataclass(frozen=True)
class Option:
    """A skill the planner may apply, with its variants in the order to try them."""

    skill_id: str
    reason: str
    move: str = "ranked"
    variants: list[dict[str, Any]] = field(default_factory=lambda: [{}])


def variant_key(skill_id: str, params: dict[str, Any]) -> tuple[str, str]:
    """The (skill, parameters) identity of Attempt.key()."""
    return skill_id, repr(sorted(params.items()))


def aim(limiter: str | None, why: str, bottlenecks: Collection[str], target: str | None,
        touched: bool | None) -> str:
    """What the option's reason says about the target: the author's verdict on its code where it
    has one (`touched`), the limiter word the skill declares otherwise."""
    matches = limiter is not None and limiter in bottlenecks
    if touched:
        return f"; changes the target kernel {target}" + (f" and addresses its limiter ({why})" if matches
                                                          else "")
    if touched is False:
        return f"; declares the limiter {limiter} but leaves the target kernel {target} as it is" if matches \
            else ""
    return f"; addresses the limiter ({why})" if matches else ""


def by_target(options: list[Option], touched: dict[str, bool | None]) -> list[Option]:
    """Options whose code changes the target kernel first (`touched` True), then the unknown (None
    or absent), then those that leave it as it is (False); rank order kept within each group."""
    group = {True: 0, None: 1, False: 2}
    return sorted(options, key=lambda o: group[touched.get(o.skill_id)])


def first_untried(skill_id: str, variants: list[dict[str, Any]],
                  tried: set[tuple[str | None, str]]) -> dict[str, Any] | None:
    """The skill's first variant not tried on this task (the one a round would try first)."""
    return next((v for v in variants if variant_key(skill_id, v) not in tried), None)


Check = Callable[[str, dict[str, Any]], bool]


def never(skill_id: str, params: dict[str, Any]) -> bool:
    return False


# Rationale: parameters several skills share act the same whatever the skill (the precision knobs
# of gemm-tf32x3-strict-fp32 and the triangular / symmetric GEMM rewrites). When every GEMM skill
# still offered them, an H100 judged level1/01's `f16_scales: row` and `chunk` in five rounds, each
# time slower than that round's default (0.88-0.97 ms against 0.81-0.91): half of each round's
# evaluations, measuring again what the rounds before had measured.
LOST_HERE = 2


def lost_here(attempts: list[Any], skill_id: str, params: dict[str, Any], times: int = LOST_HERE,
              timed: bool = True) -> bool:
    """Pure: did these parameters lose to their round's default variant (params {}) every time this
    task judged them under another skill, at least `times` times? A loss is an incorrect variant or
    one slower than the default judged in the same round; one variant faster than its default and
    they are no loser. `timed` False (a CPU run: interpreter timings rank nothing): only incorrect
    variants count."""
    if not params:
        return False
    losses = 0
    for a in attempts:
        if a.params != params or a.skill_id in (None, skill_id) or not a.judged or a.node == RUN_OFF:
            continue
        if a.outcome != "correct":
            losses += 1
            continue
        if not timed:
            continue
        default = next((b.runtime_ms for b in attempts if b.round == a.round and b.skill_id == a.skill_id
                        and not b.params and b.outcome == "correct" and b.runtime_ms), None)
        if default is None or a.runtime_ms is None:
            continue
        if a.runtime_ms < default:
            return False
        losses += 1
    return losses >= times


def first_move(options: list[Option], tried: set[tuple[str | None, str]], differs: Check, cap: int,
               skip: Check = never) -> Plan | None:
    """The first option with untried variants that change the best candidate: up to `cap` of them,
    none that `skip` says. Cheap checks first: `differs` may dry-run a build, so it never runs for a
    tried variant."""
    for opt in options:
        picked: list[dict[str, Any]] = []
        for params in opt.variants:
            if variant_key(opt.skill_id, params) in tried or params in picked or skip(opt.skill_id, params):
                continue
            if differs(opt.skill_id, params):
                picked.append(params)
                if len(picked) >= cap:
                    break
        if picked:
            return Plan(skill_id=opt.skill_id, params=picked[0], variants=picked, reason=opt.reason,
                        move=opt.move)
    return None


def plan_round(ranked: list[Option], fallbacks: list[Option], tried: set[tuple[str | None, str]],
               differs: Check, cap: int, headroom: float | None,
               loser: Check = never) -> tuple[Plan | None, str | None]:
    """(plan, None), or (None, why nothing is planned). Ranked options first; then, unless the best
    is within NEAR_FLOOR of its floor, the fallbacks; nothing within AT_FLOOR. Variants the memory
    calls losers (`loser`) join a round only once no option has any other move."""
    if headroom is not None and headroom <= AT_FLOOR:
        return None, (f"the best candidate runs within {AT_FLOOR}x of its speed-of-light floor "
                      f"({headroom:.2f}x)")
    near = headroom is not None and headroom <= NEAR_FLOOR
    for skip in dict.fromkeys((loser, never)):  # known losers first held back, then allowed
        for options in (ranked, [] if near else fallbacks):
            plan = first_move(options, tried, differs, cap, skip)
            if plan is not None:
                return plan, None
    if near:
        return None, (f"no ranked skill left and the best candidate runs within {NEAR_FLOOR}x of its "
                      f"speed-of-light floor ({headroom:.2f}x)")
    where = f" at {headroom:.2f}x its floor" if headroom is not None else ""
    return None, (f"nothing left that changes the best candidate{where}: every ranked skill, every "
                  f"variant of the applied skills and every template the author can apply ({len(ranked)} "
                  f"ranked, {len(fallbacks)} fallback options) was tried or generates the same code")
