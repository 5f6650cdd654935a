"""Integer outputs (argmax indices) beside a float output."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.softmax(x, dim=-1)
        return y, y.argmax(dim=-1)


def get_inputs():
    return [torch.randn(5, 8)]


def get_init_inputs():
    return []
