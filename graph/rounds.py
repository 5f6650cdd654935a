"""report.json's round-by-round record, derived from the plans and the attempts log (pure).

Round 0 is the first candidate; each later round is one plan: the skill chosen and why, the
variants it built with their parameters, outcome and measured runtime, and the round's effect:
the best candidate's runtime before the round over its runtime after it, where one of the round's
variants became the best (`won`), else 1.0. The delivered candidate is timed again by the full
protocol at the end: that drift is no round's effect (an H100 bench of 2026-12-06 reported a
round whose variants ran 2.4x slower as won, +1.6%: problems/measurements/h100-2026-12-06-judge-gap/).
On a CPU the runtimes are the interpreter's: kept, but never read as an effect (`effect` None,
`timing` says so).
"""

from __future__ import annotations

from typing import Any

from ..nodes.runoff import RUN_OFF
from ..state.graph_state import GraphState
from ..state.records import Attempt


def _variant(a: Attempt) -> dict[str, Any]:
    return {"node": a.node, "params": a.params, "outcome": a.outcome, "stage": a.stage,
            "runtime_ms": a.runtime_ms, "source_hash": a.source_hash, "repeat_of": a.repeat_of,
            "error": (a.error or "").splitlines()[0][:200] if a.error else None}


def round_records(state: GraphState) -> list[dict[str, Any]]:
    """One entry per round, in order."""
    cpu = state.settings.device != "cuda"
    plans = {p.round: p for p in state.plans if p.round is not None}
    rounds = sorted({0, *plans, *(a.round for a in state.attempts)})
    # The best's runtime before round r is what the planner saw when planning it; after the last
    # round it is the final best's.
    befores = [plans[r].best_ms if r in plans else None for r in rounds]
    final = state.best_verdict.runtime_ms if state.best_verdict and state.best_verdict.correct else None
    out = []
    for i, r in enumerate(rounds):
        plan = plans.get(r)
        tried = [a for a in state.attempts if a.round == r and a.node != RUN_OFF]
        raced = [a for a in state.attempts if a.round == r and a.node == RUN_OFF]
        correct = [a.runtime_ms for a in tried if a.outcome == "correct" and a.runtime_ms is not None]
        before = befores[i]
        after = next((b for b in befores[i + 1:] if b is not None), final)
        fastest = min(correct) if correct else None
        won = (not cpu and before is not None and after is not None and fastest is not None
               and fastest < before and after < before)
        if won and i == len(rounds) - 1 and state.best is not None:  # the final best is this round's
            won = state.best.hash in {a.source_hash for a in tried}
        if won and raced:  # measured by the run-off: both timed together, not minutes apart
            after = raced[-1].runtime_ms
            before = raced[0].runtime_ms if raced[0].runtime_ms else before
        effect = (before / after if won else 1.0) if before and after and not cpu else None
        out.append({
            "round": r,
            "skill": plan.skill_id if plan else None,
            "move": plan.move if plan else "first candidate",
            "reason": plan.reason if plan else "the first candidate: the author's default templates",
            "variants_planned": plan.all_variants() if plan else [],
            "variants": [_variant(a) for a in tried],
            "run_off": [_variant(a) | {"note": a.note} for a in raced],
            "fastest_correct_ms": fastest,
            "best_before_ms": before,
            "best_after_ms": after,
            "effect": round(effect, 4) if effect is not None else None,
            "won": won,
            "timing": "cpu (interpreter: runtimes are no speed)" if cpu else "gpu",
        })
    return out
