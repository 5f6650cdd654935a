"""Matrix multiplication with irregular (prime / odd) dimensions that do not divide any tile size."""

import torch
import torch.nn as nn

M = 3001
K = 4093
N = 2711
SMALL = {"M": 61, "K": 83, "N": 47}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
