"""BatchNorm2d in training mode (batch statistics over N, H, W per channel), with affine parameters."""

import torch
import torch.nn as nn

BATCH = 40
CHANNELS = 120
HEIGHT = 300
WIDTH = 360
SMALL = {"BATCH": 5, "CHANNELS": 6, "HEIGHT": 11, "WIDTH": 13}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
