"""Conv2d (3x3, valid) + GroupNorm (8 groups) + SiLU + 2x2 max pooling."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 24
IN_CHANNELS = 64
OUT_CHANNELS = 128
GROUPS = 8
HEIGHT = 130
WIDTH = 130
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 16, "HEIGHT": 14, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.norm = nn.GroupNorm(groups, out_channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        x = F.silu(self.norm(self.conv(x)))
        return F.max_pool2d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
