"""Default template for argmax / argmin and max / min with a dim: one read of the input.

Per-lane (value, first index) pairs updated with a strict comparison, NaN counted as the
extreme (as PyTorch does), ties resolved to the first index; lanes combine by the best value
then the smallest index holding it. Strided reduced dims run as coalesced column tiles.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import IndexReductionTemplate

TEMPLATE = IndexReductionTemplate()
