"""Transposed 3-D convolution upsampling by 2 (kernel 3, stride 2, padding 1, output_padding 1)."""

import torch
import torch.nn as nn

BATCH = 5
IN_CHANNELS = 128
OUT_CHANNELS = 64
DEPTH = 16
HEIGHT = 48
WIDTH = 48
KERNEL = 3
STRIDE = 2
SMALL = {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 4, "DEPTH": 3, "HEIGHT": 5, "WIDTH": 6}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel, stride):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel, stride=stride,
                                       padding=kernel // 2, output_padding=stride - 1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE]
