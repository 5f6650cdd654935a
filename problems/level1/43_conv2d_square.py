"""2-D convolution, 3x3 kernel, stride 1, same padding, 128 -> 256 channels on square images."""

import torch
import torch.nn as nn

BATCH = 48
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 88
WIDTH = 88
KERNEL = 3
SMALL = {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 7, "HEIGHT": 13, "WIDTH": 15}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, padding=kernel // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
