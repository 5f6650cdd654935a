"""3-D average pooling with non-overlapping 2x2x2 windows over (N, C, D, H, W) volumes."""

import torch
import torch.nn as nn

BATCH = 24
CHANNELS = 32
DEPTH = 64
HEIGHT = 128
WIDTH = 144
KERNEL = 2
STRIDE = 2
SMALL = {"BATCH": 2, "CHANNELS": 3, "DEPTH": 6, "HEIGHT": 10, "WIDTH": 14}


class Model(nn.Module):
    def __init__(self, kernel, stride):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel, stride=stride)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL, STRIDE]
