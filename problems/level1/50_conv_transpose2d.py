"""Transposed 2-D convolution upsampling by 2 (kernel 4, stride 2, padding 1), 256 -> 128 channels."""

import torch
import torch.nn as nn

BATCH = 40
IN_CHANNELS = 256
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64
KERNEL = 4
STRIDE = 2
PADDING = 1
SMALL = {"BATCH": 2, "IN_CHANNELS": 6, "OUT_CHANNELS": 5, "HEIGHT": 7, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel, stride, padding):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE, PADDING]
