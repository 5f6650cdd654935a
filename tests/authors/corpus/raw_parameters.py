"""nn.Parameters used directly in the forward (x @ W + b), no nn.Linear."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, h) * 0.1)
        self.b = nn.Parameter(torch.zeros(h))

    def forward(self, x):
        return F.softplus(x @ self.w + self.b)


def get_inputs():
    return [torch.randn(6, 10)]


def get_init_inputs():
    return [10, 7]
