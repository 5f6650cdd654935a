"""A large position scale built in the forward from torch.arange on a size fixed at init."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        scale = torch.arange(self.n, dtype=torch.float32) / self.n
        return torch.tanh(x * scale.unsqueeze(0) + 0.5)


def get_inputs():
    return [torch.randn(3, 5000)]


def get_init_inputs():
    return [5000]
