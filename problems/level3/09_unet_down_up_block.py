"""One UNet level: double conv, max-pool, double conv, transposed-conv up, skip concat, double conv, 1x1."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 6
IN_CHANNELS = 32
BASE = 64
OUT_CHANNELS = 8
HEIGHT = 176
WIDTH = 176
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "BASE": 4, "OUT_CHANNELS": 2, "HEIGHT": 12, "WIDTH": 16}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


def _double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
    )


class Model(nn.Module):
    def __init__(self, in_channels, base, out_channels):
        super().__init__()
        self.encode = _double_conv(in_channels, base)
        self.bottom = _double_conv(base, 2 * base)
        self.up = nn.ConvTranspose2d(2 * base, base, 2, stride=2)
        self.decode = _double_conv(2 * base, base)
        self.head = nn.Conv2d(base, out_channels, 1)
        _randomize_norms(self)

    def forward(self, x):
        skip = self.encode(x)
        x = self.bottom(F.max_pool2d(skip, 2))
        x = torch.cat([self.up(x), skip], dim=1)
        return self.head(self.decode(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, BASE, OUT_CHANNELS]
