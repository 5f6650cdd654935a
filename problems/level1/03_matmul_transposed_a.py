"""Matrix multiplication with a transposed left operand: C = A.T @ B, A stored as (K, M)."""

import torch
import torch.nn as nn

M = 3072
K = 4096
N = 2560
SMALL = {"M": 45, "K": 70, "N": 33}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a.T, b)


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
