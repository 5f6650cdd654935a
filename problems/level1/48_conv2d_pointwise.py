"""Pointwise (1x1) 2-D convolution, 240 -> 480 channels: a per-pixel GEMM over channels."""

import torch
import torch.nn as nn

BATCH = 144
IN_CHANNELS = 240
OUT_CHANNELS = 480
HEIGHT = 56
WIDTH = 56
SMALL = {"BATCH": 2, "IN_CHANNELS": 9, "OUT_CHANNELS": 14, "HEIGHT": 7, "WIDTH": 10}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
