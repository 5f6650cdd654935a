"""ResNet basic block with a downsampling shortcut: two 3x3 conv + BN (training mode), ReLU, residual."""

import torch
import torch.nn as nn

BATCH = 48
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 112
WIDTH = 112
STRIDE = 2
SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 6, "HEIGHT": 12, "WIDTH": 10}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
            nn.BatchNorm2d(out_channels),
        )
        _randomize_norms(self)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.downsample(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, STRIDE]
