"""Linear + GroupNorm (32 groups over the features) + hardtanh(-1, 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 3072
IN_FEATURES = 3000
OUT_FEATURES = 4096
GROUPS = 32
SMALL = {"BATCH": 21, "IN_FEATURES": 45, "OUT_FEATURES": 96}


class Model(nn.Module):
    def __init__(self, in_features, out_features, groups):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return F.hardtanh(self.norm(self.linear(x)), -1.0, 1.0)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, GROUPS]
