"""Default softmax / log-softmax template: any dim, pointwise prologue and epilogue fused.

Rows that fit a tile are read once and written once; longer rows take an online (max, sum)
pass then a normalizing pass; few very long rows are split across programs (partials merged by
every chunk program). See authors/builtin/families/reductions/softmax.py for the modes.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import SoftmaxTemplate

TEMPLATE = SoftmaxTemplate()
