"""A forward returning a tuple of two tensors of different shapes."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        return y, y.sum(dim=1)


def get_inputs():
    return [torch.randn(5, 10)]


def get_init_inputs():
    return [10]
