"""Batched activations times a shared weight matrix: (B, T, K) @ (K, N) -> (B, T, N)."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1000
K = 2304
N = 1536
SMALL = {"BATCH": 2, "SEQ": 13, "K": 48, "N": 40}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return torch.matmul(x, w)


def get_inputs():
    return [torch.randn(BATCH, SEQ, K), torch.randn(K, N)]


def get_init_inputs():
    return []
