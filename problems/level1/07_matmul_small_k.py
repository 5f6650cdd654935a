"""Low-rank product with a tiny inner dimension: C = A @ B, A (M, K), B (K, N), K small (output-bound)."""

import torch
import torch.nn as nn

M = 24000
K = 40
N = 22000
SMALL = {"M": 150, "K": 9, "N": 130}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
