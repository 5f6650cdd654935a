"""Conv2d (3x3, same padding) + GELU + global average pooling -> (N, C) features, a classifier head."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_CHANNELS = 128
OUT_CHANNELS = 256
HEIGHT = 64
WIDTH = 64
SMALL = {"BATCH": 3, "IN_CHANNELS": 5, "OUT_CHANNELS": 8, "HEIGHT": 9, "WIDTH": 11}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = F.gelu(self.conv(x))
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
