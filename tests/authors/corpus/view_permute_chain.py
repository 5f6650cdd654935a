"""view / permute / reshape chain with non-contiguous intermediates around pointwise ops."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        b, c, h, w = x.shape
        y = x.view(b, c, h * w).permute(0, 2, 1)
        y = torch.relu(y) * 2.0
        return y.reshape(b, h, w, c).transpose(1, 3) + 1.0


def get_inputs():
    return [torch.randn(2, 3, 4, 5)]


def get_init_inputs():
    return []
