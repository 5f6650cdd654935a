"""A Python branch on an input's shape picks the computation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        if x.shape[0] > 4:  # noqa: SIM108 (a statement-level branch is the pattern under test)
            x = torch.relu(self.fc(x))
        else:
            x = torch.tanh(self.fc(x))
        return x.sum(dim=-1)


def get_inputs():
    return [torch.randn(6, 12)]


def get_init_inputs():
    return [12]
