"""A non-persistent buffer (random, made after the parameters) is added in the forward."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.register_buffer("shift", torch.randn(d), persistent=False)

    def forward(self, x):
        return torch.tanh(self.fc(x) + self.shift)


def get_inputs():
    return [torch.randn(5, 12)]


def get_init_inputs():
    return [12]
