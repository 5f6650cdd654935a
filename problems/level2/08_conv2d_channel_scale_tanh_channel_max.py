"""Conv2d (3x3, valid) + learned per-channel scale + tanh + max over channels -> (N, H', W')."""

import torch
import torch.nn as nn

BATCH = 24
IN_CHANNELS = 96
OUT_CHANNELS = 160
HEIGHT = 120
WIDTH = 120
SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 9, "HEIGHT": 12, "WIDTH": 15}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.channel_scale = nn.Parameter(1.0 + 0.5 * torch.randn(out_channels, 1, 1))

    def forward(self, x):
        x = torch.tanh(self.conv(x) * self.channel_scale)
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
