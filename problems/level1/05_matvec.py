"""Matrix-vector product y = A @ x with x a (K, 1) column: bandwidth-bound GEMV."""

import torch
import torch.nn as nn

M = 40000
K = 27000
SMALL = {"M": 300, "K": 170}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
