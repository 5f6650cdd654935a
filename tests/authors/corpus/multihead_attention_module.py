"""nn.MultiheadAttention (a tuple-returning module) with a residual and a norm."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + y)


def get_inputs():
    return [torch.randn(2, 5, 8)]


def get_init_inputs():
    return [8, 2]
