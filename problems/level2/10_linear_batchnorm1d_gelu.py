"""Linear + BatchNorm1d in training mode + GELU (tanh approximation)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
IN_FEATURES = 2560
OUT_FEATURES = 3584
SMALL = {"BATCH": 33, "IN_FEATURES": 40, "OUT_FEATURES": 56}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.bn.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.bn.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return F.gelu(self.bn(self.linear(x)), approximate="tanh")


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
