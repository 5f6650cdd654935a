"""An nn.Sequential of linear, norm and activation layers."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.LayerNorm(h), nn.GELU())

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(5, 12)]


def get_init_inputs():
    return [12, 20]
