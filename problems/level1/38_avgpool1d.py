"""1-D average pooling used as a smoother (kernel 3, stride 1, padding 1, zero padding counted)."""

import torch
import torch.nn as nn

BATCH = 24
CHANNELS = 200
LENGTH = 110000
KERNEL = 3
STRIDE = 1
PADDING = 1
SMALL = {"BATCH": 2, "CHANNELS": 5, "LENGTH": 77}


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
