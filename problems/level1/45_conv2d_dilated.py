"""Dilated 2-D convolution: 3x3 kernel, dilation 2, padding 2 (size-preserving), 128 -> 128 channels."""

import torch
import torch.nn as nn

BATCH = 40
CHANNELS = 128
HEIGHT = 120
WIDTH = 120
KERNEL = 3
DILATION = 2
SMALL = {"BATCH": 2, "CHANNELS": 6, "HEIGHT": 15, "WIDTH": 12}


class Model(nn.Module):
    def __init__(self, channels, kernel, dilation):
        super().__init__()
        padding = dilation * (kernel - 1) // 2
        self.conv = nn.Conv2d(channels, channels, kernel, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL, DILATION]
