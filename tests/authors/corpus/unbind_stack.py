"""unbind along a dimension, per-slice ops, stack back."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        parts = x.unbind(1)
        return torch.stack([p * (i + 1) for i, p in enumerate(parts)], dim=-1).sum(dim=1)


def get_inputs():
    return [torch.randn(4, 3, 5)]


def get_init_inputs():
    return []
