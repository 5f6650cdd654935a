"""Augmented assignment (+=, *=) on intermediates."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        z = x * 2.0
        z += y
        z *= torch.sigmoid(y)
        return z


def get_inputs():
    return [torch.randn(5, 9), torch.randn(5, 9)]


def get_init_inputs():
    return []
