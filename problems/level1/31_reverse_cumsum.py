"""Reverse (suffix) cumulative sum along dim 1 of a 3-D tensor: flip, cumsum, flip."""

import torch
import torch.nn as nn

BATCH = 64
SEQ = 8000
CHANNELS = 1024
SMALL = {"BATCH": 2, "SEQ": 70, "CHANNELS": 9}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.flip(torch.cumsum(torch.flip(x, dims=[self.dim]), dim=self.dim), dims=[self.dim])


def get_inputs():
    return [torch.randn(BATCH, SEQ, CHANNELS)]


def get_init_inputs():
    return [1]
