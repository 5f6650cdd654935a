"""Downsampling 2-D convolution: 5x5 kernel, stride 2, padding 2, 64 -> 192 channels, odd image size."""

import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 64
OUT_CHANNELS = 192
HEIGHT = 126
WIDTH = 126
KERNEL = 5
STRIDE = 2
SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 6, "HEIGHT": 17, "WIDTH": 14}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE]
