"""An early return when a tensor's values are all small, else more work on them."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        h = torch.sigmoid(self.proj(x)) * 3.0
        if h.abs().max() < 2.9:
            return h - 1.0
        h = F.softmax(h * 2.0, dim=-1)
        return h + x.abs().sum(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(4, 24)]


def get_init_inputs():
    return [24]
