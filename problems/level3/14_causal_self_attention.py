"""Causal self-attention by hand: fused QKV projection, masked_fill before the scale, out projection."""

import math

import torch
import torch.nn as nn

BATCH = 8
SEQ = 2000
DIM = 1024
HEADS = 16
SMALL = {"BATCH": 2, "SEQ": 37, "DIM": 48, "HEADS": 3}


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(dim // heads)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = (q @ k.transpose(-2, -1)).masked_fill(future, float("-inf")) * self.scale
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.proj(ctx.transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
