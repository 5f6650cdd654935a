"""An in-place op on a view of an intermediate changes the intermediate itself."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.sigmoid(x)
        flat = y.view(-1)
        flat.mul_(3.0)
        return y - 1.0


def get_inputs():
    return [torch.randn(4, 7)]


def get_init_inputs():
    return []
