"""F.scaled_dot_product_attention with a learned additive per-head bias and an explicit scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 16
SEQ = 1536
HEAD_DIM = 80
SMALL = {"BATCH": 2, "HEADS": 3, "SEQ": 29, "HEAD_DIM": 12}


class Model(nn.Module):
    def __init__(self, heads, seq, head_dim):
        super().__init__()
        self.scale = 0.8 / head_dim ** 0.5
        # A relative-position-style bias: one (seq, seq) table per head, added to the scores.
        self.bias = nn.Parameter(0.5 * torch.randn(heads, seq, seq))

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias, scale=self.scale)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM), torch.randn(BATCH, HEADS, SEQ, HEAD_DIM),
            torch.randn(BATCH, HEADS, SEQ, HEAD_DIM)]


def get_init_inputs():
    return [HEADS, SEQ, HEAD_DIM]
