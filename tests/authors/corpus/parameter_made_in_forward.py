"""A large gain made in the forward as an nn.Parameter (fx refuses a parameter the module does not own)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        gain = nn.Parameter(torch.ones(self.n) * 0.5)
        return torch.relu(x) * gain + x.mean(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(3, 4500)]


def get_init_inputs():
    return [4500]
