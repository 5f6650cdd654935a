"""A plain tensor attribute (neither parameter nor buffer) made in __init__."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d, bias=False)
        self.offset = torch.randn(d)

    def forward(self, x):
        return F.gelu(self.proj(x) - self.offset)


def get_inputs():
    return [torch.randn(4, 10)]


def get_init_inputs():
    return [10]
