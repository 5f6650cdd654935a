"""nn.ReLU(inplace=True) after a linear layer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.fc(x)) + 1.0


def get_inputs():
    return [torch.randn(6, 10)]


def get_init_inputs():
    return [10]
