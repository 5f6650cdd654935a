"""torch.gather with an integer index input, then a reduction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        return torch.exp(torch.gather(x, 1, idx)).sum(dim=1)


def get_inputs():
    return [torch.randn(4, 10), torch.randint(0, 10, (4, 3))]


def get_init_inputs():
    return []
