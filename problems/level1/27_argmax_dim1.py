"""Argmax over the middle dimension of a 3-D tensor: (B, R, C) -> int64 indices (B, C)."""

import torch
import torch.nn as nn

BATCH = 128
REDUCE = 3000
COLS = 2800
SMALL = {"BATCH": 3, "REDUCE": 47, "COLS": 20}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, REDUCE, COLS)]


def get_init_inputs():
    return [1]
