"""Comparisons feeding torch.where, with an expanded broadcast."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        m = y.mean(dim=0, keepdim=True).expand_as(x)
        return torch.where(x > m, x - m, torch.zeros_like(x))


def get_inputs():
    return [torch.randn(6, 9), torch.randn(6, 9)]


def get_init_inputs():
    return []
