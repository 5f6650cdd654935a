"""A boolean mask input selects values with masked_fill before a masked mean."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, keep):
        y = x.masked_fill(~keep, 0.0)
        return y.sum(dim=1) / keep.sum(dim=1).clamp(min=1)


def get_inputs():
    return [torch.randn(4, 7), torch.rand(4, 7) > 0.3]


def get_init_inputs():
    return []
