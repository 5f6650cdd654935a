"""RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * weight (LLaMA-style)."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 4000
HIDDEN = 8192
EPS = 1e-6
SMALL = {"BATCH": 2, "SEQ": 7, "HIDDEN": 130}


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))

    def forward(self, x):
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
