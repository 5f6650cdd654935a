"""Conv2d (3x3, same padding, C -> C) + hardswish + residual add of the block input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 48
CHANNELS = 112
HEIGHT = 92
WIDTH = 92
SMALL = {"BATCH": 2, "CHANNELS": 6, "HEIGHT": 11, "WIDTH": 14}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + F.hardswish(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
