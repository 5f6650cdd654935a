"""1-D max pooling (kernel 5, stride 2, padding 2) over long (N, C, L) sequences."""

import torch
import torch.nn as nn

BATCH = 48
CHANNELS = 160
LENGTH = 100000
KERNEL = 5
STRIDE = 2
PADDING = 2
SMALL = {"BATCH": 2, "CHANNELS": 3, "LENGTH": 101}


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
