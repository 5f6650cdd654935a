"""Linear + ReLU + logsumexp over the features (a smooth max-pool): (B, IN) -> (B,)."""

import torch
import torch.nn as nn

BATCH = 3072
IN_FEATURES = 2048
OUT_FEATURES = 6000
SMALL = {"BATCH": 29, "IN_FEATURES": 50, "OUT_FEATURES": 77}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.logsumexp(torch.relu(self.linear(x)), dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
