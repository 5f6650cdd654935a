"""Conv2d (3x3, same padding) + 2x2 average pooling + sigmoid + sum over channels -> (N, H/2, W/2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CHANNELS = 48
OUT_CHANNELS = 96
HEIGHT = 144
WIDTH = 144
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 7, "HEIGHT": 12, "WIDTH": 14}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = torch.sigmoid(F.avg_pool2d(self.conv(x), 2))
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
