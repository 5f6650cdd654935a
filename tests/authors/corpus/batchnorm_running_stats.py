"""BatchNorm1d (running-stat buffers) after a linear layer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))


def get_inputs():
    return [torch.randn(8, 10)]


def get_init_inputs():
    return [10]
