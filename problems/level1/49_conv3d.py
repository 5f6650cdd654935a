"""3-D convolution, 3x3x3 kernel, same padding, 48 -> 96 channels over short video clips."""

import torch
import torch.nn as nn

BATCH = 4
IN_CHANNELS = 48
OUT_CHANNELS = 96
DEPTH = 18
HEIGHT = 72
WIDTH = 72
KERNEL = 3
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 5, "DEPTH": 5, "HEIGHT": 8, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel, padding=kernel // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
