"""A tensor's maximum read as a Python float (.item()), clamped in Python and used in later arithmetic."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        y = torch.exp(x) - 1.0
        peak = max(y.abs().max().item(), 1e-6)
        z = F.gelu(y / peak) * peak
        return z + 0.5 * x


def get_inputs():
    return [torch.randn(8, 33)]


def get_init_inputs():
    return []
