"""A branch on a tensor value (not a shape): no static graph exists."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            return torch.relu(x) * 2.0
        return torch.relu(-x)


def get_inputs():
    return [torch.randn(5, 7)]


def get_init_inputs():
    return []
