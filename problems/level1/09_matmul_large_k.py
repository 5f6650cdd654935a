"""Matrix multiplication with a small output and a very long reduction dimension (split-K territory)."""

import torch
import torch.nn as nn

M = 640
K = 50000
N = 896
SMALL = {"M": 19, "K": 4099, "N": 23}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
