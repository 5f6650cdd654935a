"""Sum reduction over the middle dimension of a 3-D tensor: (B, R, C) -> (B, C)."""

import torch
import torch.nn as nn

BATCH = 96
REDUCE = 5000
COLS = 2200
SMALL = {"BATCH": 3, "REDUCE": 51, "COLS": 40}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, REDUCE, COLS)]


def get_init_inputs():
    return [1]
