"""The ranking formula: embedding similarity + exact-match bonuses + experience adjustment.

    score = sim                                   cosine(query signature, skill trigger text)
          + W_STRUCT * [a skill structure is in the profile]
          + W_BOTTLE * [the profile's bottleneck is one of the skill's]
          + W_OPS    * [an op the skill lists (`ops:`) is named in the query]
          + W_POLICY * [the skill exists only under a policy this run opted into (TF32, inference)]
          + W_WIN  * 2 * (p - 1/2),  p = (wins + 1) / (tries + 2)
          + W_GAIN * clamp(log2(mean_gain), -1, 1) * tries / (tries + 2)

Rationale (measured on the 38-signature table in tests/skill_index/skill_cases.py, top-3 hits):
similarity alone 31/38; the full formula 37/38; dropping W_OPS 32/38, W_POLICY 36/38, the
structure and bottleneck terms 37/38 each. Embedding the raw signature instead of the cleaned one
(numbers and fixed phrasing removed, facts.embed_text) gives 32/38.
- Op names are the most specific words a profile has ("tril", "cumprod", "argmax"); many skills
  share a structure (a dozen apply to gemm), so without this term the generic skills of a
  structure outrank the one written for the exact op. It is the largest text bonus for that reason.
- Structure and bottleneck matches are exact where MiniLM is fuzzy; hard gates already remove
  skills for absent structures, so these small terms only break near-ties among the survivors
  (they do not change the table's result, and they make the `reason` honest about what matched).
- A skill gated on an opt-in policy (`needs_tf32_policy`, `inference_only`) is the reason the user
  opted in: under --allow-tf32 a compute-bound fp32 GEMM's best move is TF32 tensor cores, but the
  embedder cannot see the policy, so the gate that let the skill through also lifts it.
- p is the posterior mean of a win rate under a uniform Beta(1, 1) prior (Laplace smoothing):
  with no history p = 1/2 and the term is 0, so an untried skill keeps its similarity rank;
  one that failed 5/5 on this structure gets p = 1/7 and loses 0.11, enough to fall below its
  neighbours; one that won 5/5 gains 0.11. Few tries move it little, because one lucky or
  unlucky run should not outweigh what the profile says.
- The gain term prefers skills whose wins were large (2x counts fully, 1.1x barely), damped by
  the same tries / (tries + 2) confidence, and capped so a single huge win cannot dominate.
- Only tries timed on a GPU count: the CPU interpreter's timings say nothing about speed.
- The same adjustment, on one variant's rows, orders the variants a round tries (`variant_order`);
  a variant that only ever lost by a wide margin (`known_loser`) waits until nothing else is left.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .stats import Experience

W_STRUCT = 0.06
W_BOTTLE = 0.05
W_OPS = 0.10
W_POLICY = 0.15
W_WIN = 0.15
W_GAIN = 0.05


def win_probability(exp: Experience) -> float:
    """Laplace-smoothed win rate over the tries timed on a GPU: the posterior mean under a uniform
    prior (CPU tries have no timing, so they are no evidence either way)."""
    return (exp.wins + 1) / (exp.tries - exp.untimed + 2)


def experience_adjustment(exp: Experience) -> float:
    timed = exp.tries - exp.untimed
    adj = W_WIN * 2.0 * (win_probability(exp) - 0.5)
    if exp.mean_gain is not None and timed:
        log_gain = max(-1.0, min(1.0, math.log2(exp.mean_gain)))
        adj += W_GAIN * log_gain * timed / (timed + 2)
    return adj


LOSS = 0.67
"""Mean gain at or below which a variant with no win is a known loser (1.5x slower than the best)."""


def known_loser(own: Experience, shared: Experience) -> bool:
    """A variant the memory says loses: no win and a mean gain at or below LOSS over its own timed
    tries (this skill), or, with none, over two or more of other skills with the same parameters on
    these structures (a precision knob several GEMM skills share: on an H100 level1/01's
    `input_precision: ieee` ran 2.9x slower in each of six rounds, a quarter of their evaluations,
    when every GEMM skill offered it; the precision skill and the structural GEMM rewrites still do)."""
    exp = own if own.tries - own.untimed else shared
    timed = exp.tries - exp.untimed
    enough = timed >= (1 if exp is own else 2)
    return enough and exp.wins == 0 and exp.mean_gain is not None and exp.mean_gain <= LOSS


def variant_order(variants: list[dict[str, Any]], experience: Callable[[dict[str, Any]], Experience]
                  ) -> list[dict[str, Any]]:
    """Variants of one skill, the best by experience first; ties (no history) keep the declared
    order, so an untried library starts with the default and then the author's own order."""
    adj = [experience_adjustment(experience(v)) for v in variants]
    return [v for _, _, v in sorted(zip((-a for a in adj), range(len(variants)), variants, strict=True),
                                   key=lambda t: (t[0], t[1]))]


def score(similarity: float, structure_match: bool, bottleneck_match: bool, op_match: bool,
          policy_unlocked: bool, exp: Experience) -> float:
    return (similarity + W_STRUCT * structure_match + W_BOTTLE * bottleneck_match + W_OPS * op_match
            + W_POLICY * policy_unlocked + experience_adjustment(exp))
