"""3-D max pooling (kernel 3, stride 2, padding 1) over (N, C, D, H, W) video features."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 48
DEPTH = 44
HEIGHT = 160
WIDTH = 176
KERNEL = 3
STRIDE = 2
PADDING = 1
SMALL = {"BATCH": 2, "CHANNELS": 3, "DEPTH": 7, "HEIGHT": 9, "WIDTH": 11}


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
