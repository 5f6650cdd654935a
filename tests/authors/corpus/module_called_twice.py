"""One linear layer applied twice (a shared weight across two uses)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(torch.relu(self.fc(x)))


def get_inputs():
    return [torch.randn(6, 14)]


def get_init_inputs():
    return [14]
