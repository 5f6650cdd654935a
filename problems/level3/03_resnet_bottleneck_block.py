"""ResNet bottleneck block: 1x1 reduce, 3x3, 1x1 expand (x4), BN in training mode, identity shortcut."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 512
WIDTH_CHANNELS = 128
HEIGHT = 56
WIDTH = 56
SMALL = {"BATCH": 2, "CHANNELS": 16, "WIDTH_CHANNELS": 4, "HEIGHT": 9, "WIDTH": 11}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


class Model(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)
        _randomize_norms(self)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = torch.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return torch.relu(out + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, WIDTH_CHANNELS]
