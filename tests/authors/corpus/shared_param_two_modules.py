"""Two submodules hold the very same Linear (one parameter set, two names)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        shared = nn.Linear(d, d)
        self.a = shared
        self.b = shared
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(self.a(x) + self.b(torch.tanh(x)))


def get_inputs():
    return [torch.randn(6, 16)]


def get_init_inputs():
    return [16]
