"""Linear (D -> D) + LayerNorm + residual add of the input: x + LN(x @ W.T + b)."""

import torch
import torch.nn as nn

TOKENS = 4000
DIM = 3072
SMALL = {"TOKENS": 19, "DIM": 72}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return x + self.norm(self.linear(x))


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM]
