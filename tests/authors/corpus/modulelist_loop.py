"""A ModuleList of layers applied in a Python loop with a residual."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = x + F.silu(layer(x))
        return x


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16, 3]
