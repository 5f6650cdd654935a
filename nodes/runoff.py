"""A run-off: the best so far and a round's near-winner judged again, together in one batch.

A variant whose median beats the best by `min_gain` but not by the run-to-run spread either
timing measured (reviewer.is_better) is neither a win nor a loss: the two medians came from
different evaluations, minutes apart, one of them often the thread's first, whose full protocol
ran beside the baseline process and a spare judge starting. On an H100 (2026-12-07,
problems/measurements/h100-2026-12-07-side-by-side/) level2/02's first candidate measured
0.878 ms with a 16% spread there and 0.818 ms when finalize re-timed it; a norm-statistics
variant at 0.798 ms could not beat the 16%. The run-off judges both sources again in one batch,
under the same conditions, and decides on those two medians: by `min_gain` and by how sure each
median is (the spread over the square root of its runs, `median_doubt`), not by the spread of
single runs.

A clear win goes to a run-off too, unless it clears CLEAR_WIN: the best's median is from another
evaluation, usually the thread's first and 'full' one, while a round's are 'rank' ones. On an
H100 (2026-12-07, problems/measurements/h100-2026-12-07-target-variants/rounds-b/) level1/01's
rounds rank-timed code close to the first candidate's at 0.837-0.913 ms against its full 0.923 ms,
and two of those "won" (0.866, 0.808 ms) although finalize re-timed the delivered one at 0.896.
"""

from __future__ import annotations

import math

from ..state.graph_state import Verdict

RUN_OFF = "run-off"
"""The attempts' node of the two re-judges (the best's first, then the contender's)."""
# Rationale: the standard error of a median of n runs is about 1.25 sigma / sqrt(n) and an
# interquartile range about 1.35 sigma, so spread x 0.93 / sqrt(n); two of them make a margin.
MEDIAN_SE_PER_SPREAD, MARGIN_SE = 0.93, 2.0
# Rationale: medians of one source from two evaluations have differed by up to 10% (above); a gain
# of more than 1.25x is no such difference, and re-judging it would cost two evaluations for nothing.
CLEAR_WIN = 1.25


def clear_win(v: Verdict, best: Verdict | None) -> bool:
    """Pure: is `v`'s gain over the best beyond any difference between two evaluations (or is
    there no timed best to compare with)? Anything less that beats the best is raced again."""
    if best is None or not best.correct or not best.runtime_ms:
        return True
    return bool(v.runtime_ms) and v.runtime_ms * CLEAR_WIN < best.runtime_ms


def near_win(v: Verdict, best: Verdict | None, min_gain: float) -> bool:
    """Pure: a correct GPU timing faster than the best by `min_gain` on the medians (the caller
    asks only where reviewer.is_better said no)."""
    if best is None or not best.correct or not best.runtime_ms or not v.correct or not v.runtime_ms:
        return False
    if v.timing_is_cpu or best.timing_is_cpu:
        return False
    return v.runtime_ms * min_gain < best.runtime_ms


def median_doubt(v: Verdict) -> float:
    """Pure: the relative standard error of the verdict's median (its spread, over the square root
    of its timed runs; the spread itself where the runs are unknown)."""
    spread = v.noise or 0.0
    return MEDIAN_SE_PER_SPREAD * spread / math.sqrt(v.timed_runs) if v.timed_runs else spread


def runoff_won(contender: Verdict, best: Verdict, min_gain: float) -> bool:
    """Pure: does the contender beat the best in a run-off (both judged in one batch)? By
    `min_gain` and by MARGIN_SE standard errors of the two medians together."""
    if not (contender.correct and best.correct and contender.runtime_ms and best.runtime_ms):
        return False
    doubt = math.hypot(median_doubt(contender), median_doubt(best))
    return contender.runtime_ms * max(min_gain, 1.0 + MARGIN_SE * doubt) < best.runtime_ms
