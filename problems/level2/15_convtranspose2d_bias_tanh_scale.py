"""ConvTranspose2d (3x3, stride 2, output_padding 1) + learned bias subtraction + tanh + constant scale."""

import torch
import torch.nn as nn

BATCH = 36
IN_CHANNELS = 208
OUT_CHANNELS = 96
HEIGHT = 64
WIDTH = 64
SCALE = 1.5
SMALL = {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 6, "HEIGHT": 6, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, scale):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)
        self.shift = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))
        self.scale = scale

    def forward(self, x):
        return torch.tanh(self.conv(x) - self.shift) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, SCALE]
