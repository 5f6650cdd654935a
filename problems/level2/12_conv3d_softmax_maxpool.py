"""Conv3d (3x3x3, same padding) + softmax over channels + 2x2x2 max pooling."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 24
HEIGHT = 64
WIDTH = 64
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 5, "DEPTH": 4, "HEIGHT": 8, "WIDTH": 10}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = torch.softmax(self.conv(x), dim=1)
        return F.max_pool3d(x, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
