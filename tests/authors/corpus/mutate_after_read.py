"""An intermediate read, then assigned into in place, then read again (order must hold)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x * 2.0
        z = y + 1.0
        y[:, 1:3] = -4.0
        return z * y, y


def get_inputs():
    return [torch.randn(5, 6)]


def get_init_inputs():
    return []
