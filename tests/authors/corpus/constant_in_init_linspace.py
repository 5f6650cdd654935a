"""A constant tensor created with torch.arange in __init__ and used as a buffer-less attribute in forward."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.freqs = 1.0 / (10.0 ** (torch.arange(0, t, 2).float() / t))

    def forward(self, x):
        return torch.sin(x[..., ::2] * self.freqs) + torch.cos(x[..., 1::2] * self.freqs)


def get_inputs():
    return [torch.randn(3, 8)]


def get_init_inputs():
    return [8]
