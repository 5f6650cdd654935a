"""Four-layer MLP classifier: Linear + ReLU stacks 4096 -> 6144 -> 6144 -> 3072 -> 1000."""

import torch
import torch.nn as nn

BATCH = 512
IN_FEATURES = 4096
HIDDEN = 6144
OUT_FEATURES = 1000
SMALL = {"BATCH": 9, "IN_FEATURES": 40, "HIDDEN": 66, "OUT_FEATURES": 10}


class Model(nn.Module):
    def __init__(self, in_features, hidden_sizes, out_features):
        super().__init__()
        layers = []
        width = in_features
        for size in hidden_sizes:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, out_features))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, [HIDDEN, HIDDEN, HIDDEN // 2], OUT_FEATURES]
