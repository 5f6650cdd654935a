"""Attention with a causal mask built in the forward at a block size set at init (too big for a literal)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d, block):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.block = block

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = torch.triu(torch.ones(self.block, self.block), diagonal=1).bool()
        att = (q @ k.transpose(1, 2)) * q.shape[-1] ** -0.5
        att = att.masked_fill(mask, float("-inf"))
        return F.softmax(att, dim=-1) @ v


def get_inputs():
    return [torch.randn(2, 72, 16)]


def get_init_inputs():
    return [16, 72]
