"""Downsampling Conv2d (3x3, stride 2, no bias) + BatchNorm2d in training mode + Mish (CSPDarknet-style)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 36
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 152
WIDTH = 152
SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 7, "HEIGHT": 15, "WIDTH": 12}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.bn.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.bn.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return F.mish(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
