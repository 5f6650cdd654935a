"""An intermediate read before and after in-place updates (the early read sees the old value)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        y = self.fc(x)
        before = y * 2.0
        y.relu_()
        y.sub_(0.5)
        return before + y, y


def get_inputs():
    return [torch.randn(5, 12)]


def get_init_inputs():
    return [12]
