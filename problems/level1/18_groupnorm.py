"""GroupNorm with 12 groups over an (N, C, H, W) feature map, with affine parameters."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 96
GROUPS = 12
HEIGHT = 384
WIDTH = 448
SMALL = {"BATCH": 2, "CHANNELS": 24, "HEIGHT": 9, "WIDTH": 11}


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-5)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [GROUPS, CHANNELS]
