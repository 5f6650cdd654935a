"""Cosine embedding loss per pair: 1 - cos(x1, x2) for similar pairs (y = 1), max(0, cos - margin) else."""

import torch
import torch.nn as nn
import torch.nn.functional as F

PAIRS = 60000
DIM = 9000
MARGIN = 0.1
SMALL = {"PAIRS": 41, "DIM": 66}


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, x1, x2, y):
        return F.cosine_embedding_loss(x1, x2, y, margin=self.margin, reduction="none")


def get_inputs():
    x1 = torch.randn(PAIRS, DIM)
    # x2 = alpha * x1 + noise with a per-pair alpha: cosines spread over (-1, 1) instead of
    # concentrating at 0 as they would for independent high-dimensional vectors.
    alpha = torch.randn(PAIRS, 1)
    x2 = alpha * x1 + torch.randn(PAIRS, DIM)
    # Integer labels in {-1, 1}: the evaluator's float perturbations leave them valid.
    y = torch.randint(0, 2, (PAIRS,)) * 2 - 1
    return [x1, x2, y]


def get_init_inputs():
    return [MARGIN]
