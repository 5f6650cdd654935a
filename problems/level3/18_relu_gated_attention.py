"""Causal attention with ReLU weights (no softmax), gated per head by a learned sigmoid, by hand."""

import math

import torch
import torch.nn as nn

BATCH = 4
SEQ = 1536
DIM = 768
HEADS = 12
SMALL = {"BATCH": 2, "SEQ": 29, "DIM": 40, "HEADS": 5}


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.gate = nn.Parameter(torch.randn(heads, 1, 1))

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = (f(x).view(b, t, self.heads, hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(hd)).masked_fill(causal, float("-inf"))
        ctx = torch.relu(scores) @ v
        ctx = ctx * torch.sigmoid(self.gate) / t
        return self.out(ctx.transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
