"""Linear layer followed by GELU and a constant scale: 0.5 * gelu(x @ W.T + b)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 6144
SCALE = 0.5
SMALL = {"BATCH": 37, "IN_FEATURES": 65, "OUT_FEATURES": 48}


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.linear(x)) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, SCALE]
