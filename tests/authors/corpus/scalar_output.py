"""A 0-dim scalar output: mean squared error of a linear prediction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    def forward(self, x, target):
        return ((self.fc(x).squeeze(-1) - target) ** 2).mean()


def get_inputs():
    return [torch.randn(8, 6), torch.randn(8)]


def get_init_inputs():
    return [6]
