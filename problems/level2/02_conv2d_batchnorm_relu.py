"""Conv2d (3x3, no bias) + BatchNorm2d in training mode + ReLU: the classic CNN stage."""

import torch
import torch.nn as nn

BATCH = 44
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 112
WIDTH = 112
SMALL = {"BATCH": 3, "IN_CHANNELS": 4, "OUT_CHANNELS": 6, "HEIGHT": 13, "WIDTH": 11}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.bn.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.bn.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
