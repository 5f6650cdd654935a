"""InstanceNorm2d (statistics per sample and channel over H, W) with affine parameters."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
HEIGHT = 768
WIDTH = 640
SMALL = {"BATCH": 2, "CHANNELS": 5, "HEIGHT": 21, "WIDTH": 17}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
