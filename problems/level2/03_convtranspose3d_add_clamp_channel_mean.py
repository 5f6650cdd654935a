"""ConvTranspose3d (upsample x2) + per-channel bias add + clamp + mean over channels -> (N, 1, D, H, W)."""

import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 96
OUT_CHANNELS = 48
DEPTH = 16
HEIGHT = 40
WIDTH = 40
CLAMP_MIN = -0.25
CLAMP_MAX = 0.25
SMALL = {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 4, "DEPTH": 3, "HEIGHT": 5, "WIDTH": 6}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1, 1))
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv(x) + self.bias
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        return x.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, CLAMP_MIN, CLAMP_MAX]
