"""In-place method ops (relu_, mul_, add_) on intermediates."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        y = self.fc(x)
        y.relu_()
        y.mul_(2.0)
        y.add_(x)
        return y


def get_inputs():
    return [torch.randn(6, 16)]


def get_init_inputs():
    return [16]
