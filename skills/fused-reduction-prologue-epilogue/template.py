"""Default reduction template: any reduced dim set, pointwise prologue and epilogue fused.

Rows of contiguous reduced dims run as row tiles (several short rows per program), strided
reductions as coalesced column tiles, few long rows split across programs; the prologue is
computed on the loaded tiles and the epilogue on the reduced values before the store, so the
region reads its inputs once and writes its output once.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import ReductionTemplate

TEMPLATE = ReductionTemplate()
