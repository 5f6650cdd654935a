"""Batched matrix multiplication C[b] = A[b] @ B[b] with torch.bmm."""

import torch
import torch.nn as nn

BATCH = 32
M = 1152
K = 1024
N = 896
SMALL = {"BATCH": 3, "M": 37, "K": 65, "N": 29}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
