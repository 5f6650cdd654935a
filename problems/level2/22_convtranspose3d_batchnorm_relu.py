"""3-D U-Net decoder step: ConvTranspose3d (kernel 2, stride 2) + BatchNorm3d in training mode + ReLU."""

import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 160
OUT_CHANNELS = 80
DEPTH = 16
HEIGHT = 56
WIDTH = 56
SMALL = {"BATCH": 2, "IN_CHANNELS": 6, "OUT_CHANNELS": 5, "DEPTH": 3, "HEIGHT": 5, "WIDTH": 7}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, 2, stride=2)
        self.bn = nn.BatchNorm3d(out_channels)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.bn.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.bn.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
