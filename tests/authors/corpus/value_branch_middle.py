"""A branch on a tensor's value between captured layers: each side and the layers around it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        h = self.inp(x) * 0.5 + 1.0
        if h.mean() > 1.0:
            h = torch.relu(h) * 2.0
            h = h - h.mean(dim=-1, keepdim=True)
        else:
            h = torch.tanh(h) - 0.25
        return self.norm(self.out(h))


def get_inputs():
    return [torch.randn(6, 16)]


def get_init_inputs():
    return [16]
