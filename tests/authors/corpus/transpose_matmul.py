"""Matmul against a transposed (non-contiguous) operand, then a softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.softmax(a @ b.transpose(-2, -1), dim=-1)


def get_inputs():
    return [torch.randn(2, 5, 8), torch.randn(2, 6, 8)]


def get_init_inputs():
    return []
