"""Grouped 2-D convolution: 3x3 kernel, 6 groups of 64 channels (ResNeXt-style), 384 -> 384 channels."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 384
GROUPS = 6
HEIGHT = 80
WIDTH = 80
KERNEL = 3
SMALL = {"BATCH": 2, "CHANNELS": 12, "HEIGHT": 11, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, channels, groups, kernel):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=groups)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, GROUPS, KERNEL]
