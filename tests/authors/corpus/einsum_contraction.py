"""torch.einsum contraction followed by pointwise ops."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.einsum("bik,bkj->bij", a, b)) - 0.5


def get_inputs():
    return [torch.randn(2, 4, 6), torch.randn(2, 6, 5)]


def get_init_inputs():
    return []
