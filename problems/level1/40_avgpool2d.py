"""2-D average pooling with non-overlapping 2x2 windows on a non-square (N, C, H, W) feature map."""

import torch
import torch.nn as nn

BATCH = 40
CHANNELS = 128
HEIGHT = 480
WIDTH = 416
KERNEL = 2
STRIDE = 2
SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 18, "WIDTH": 22}


class Model(nn.Module):
    def __init__(self, kernel, stride):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel, stride=stride)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL, STRIDE]
