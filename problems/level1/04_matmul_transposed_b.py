"""Matrix multiplication with a transposed right operand: C = A @ B.T, B stored as (N, K)."""

import torch
import torch.nn as nn

M = 2048
K = 6144
N = 2816
SMALL = {"M": 41, "K": 96, "N": 53}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b.T)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
