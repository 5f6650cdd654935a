"""Split every long row into chunks of `chunk` elements, one program per (row, chunk), with
partial states (sum; max and sum of exp; count, mean and M2; value and index) merged by a
second, tiny kernel -- or, for softmax, by every chunk program before it normalizes its chunk.

The default templates already split when rows are fewer than the SMs; this variant splits
whenever a row is longer than `chunk`, for the planner to apply when a profile shows few busy
SMs on long rows (e.g. 16 rows of 4M elements).
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import (
    IndexReductionTemplate,
    ReductionTemplate,
    SoftmaxTemplate,
    VariantTemplate,
)

TEMPLATE = VariantTemplate([IndexReductionTemplate(), ReductionTemplate(), SoftmaxTemplate()],
                           overrides={"chunk": 16384},
                           params={"chunk": [16384, 8192, 32768, 65536]})
