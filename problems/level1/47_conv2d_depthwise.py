"""Depthwise 2-D convolution (groups = channels), 5x5 kernel, same padding, as in EfficientNet blocks."""

import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 192
HEIGHT = 128
WIDTH = 128
KERNEL = 5
SMALL = {"BATCH": 2, "CHANNELS": 7, "HEIGHT": 13, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, channels, kernel):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
