"""2-D max pooling with overlapping windows (kernel 3, stride 2, padding 1), as in a ResNet stem."""

import torch
import torch.nn as nn

BATCH = 48
CHANNELS = 96
HEIGHT = 448
WIDTH = 448
KERNEL = 3
STRIDE = 2
PADDING = 1
SMALL = {"BATCH": 2, "CHANNELS": 3, "HEIGHT": 23, "WIDTH": 29}


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
