"""Conv1d over time (kernel 3) + GELU + LayerNorm over channels, as in speech encoders: (N, C, L)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 384
LENGTH = 6000
SMALL = {"BATCH": 2, "CHANNELS": 12, "LENGTH": 50}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, padding=1)
        self.norm = nn.LayerNorm(channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        x = F.gelu(self.conv(x))
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS]
