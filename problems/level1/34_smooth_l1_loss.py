"""Smooth-L1 (Huber-like, beta = 0.5) loss averaged over the last dimension: (N, C, L) -> (N, C)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 2000
LENGTH = 4200
BETA = 0.5
SMALL = {"BATCH": 2, "CHANNELS": 3, "LENGTH": 90}


class Model(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, pred, target):
        return F.smooth_l1_loss(pred, target, beta=self.beta, reduction="none").mean(dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH), torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [BETA]
