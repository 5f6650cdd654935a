"""Default per-row loss template: cross entropy (class-index or probability targets, label
smoothing, ignore_index; reduction none / mean / sum), cosine similarity and the cosine embedding
loss, in one pass.

Cross entropy keeps an online log-sum-exp (plus the row's logit sum for label smoothing) per
lane, gathers the target logit once per row, and reduces the per-row losses to per-program
partials that a one-program kernel sums in a fixed order (deterministic). Any class dim
position: a class dim that is not innermost runs as column tiles along the contiguous dims.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import LossTemplate


class FusedRowLoss(LossTemplate):
    kinds = ("cross_entropy", "cosine_similarity", "cosine_embedding_loss")


TEMPLATE = FusedRowLoss()
