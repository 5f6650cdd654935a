"""Sub-pixel upsampling (ESPCN-style): Conv2d to 4C channels + PixelShuffle(2) + per-channel PReLU."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
HEIGHT = 128
WIDTH = 128
UPSCALE = 2
SMALL = {"BATCH": 2, "CHANNELS": 5, "HEIGHT": 9, "WIDTH": 12}


class Model(nn.Module):
    def __init__(self, channels, upscale):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * upscale * upscale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(upscale)
        self.act = nn.PReLU(channels)
        # Distinct per-channel slopes (PReLU starts at a constant 0.25), so a kernel must read them.
        nn.init.uniform_(self.act.weight, 0.05, 0.45)

    def forward(self, x):
        return self.act(self.shuffle(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, UPSCALE]
