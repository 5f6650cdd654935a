"""Many short rows: bigger row tiles (more rows per program) and fewer warps per program.

For reductions and softmax over the innermost dims when rows are short (16-512 elements): each
program loads a [rows, next_power_of_2(row)] tile of `tile` elements, contiguous in memory, so
loads stay coalesced and per-program overhead is amortised over many rows.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    IndexReductionTemplate,
    ReductionTemplate,
    SoftmaxTemplate,
    VariantTemplate,
    trailing,
)

TEMPLATE = VariantTemplate([IndexReductionTemplate(), ReductionTemplate(), SoftmaxTemplate()],
                           overrides={"tile": 16384, "warps": [(4, 1), (2, 1), (8, 1), (1, 1)]},
                           params={"tile": [16384, 8192, 32768]}, applies=trailing)
