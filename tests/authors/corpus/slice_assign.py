"""A cloned intermediate with a slice assigned in place."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.exp(x).clone()
        y[:, 0] = 0.0
        return y * 3.0


def get_inputs():
    return [torch.randn(4, 6)]


def get_init_inputs():
    return []
