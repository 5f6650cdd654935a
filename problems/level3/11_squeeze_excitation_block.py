"""SE-ResNet basic block: two 3x3 conv + BN, squeeze-and-excitation channel gating, identity residual."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 48
CHANNELS = 192
REDUCTION = 16
HEIGHT = 40
WIDTH = 40
SMALL = {"BATCH": 2, "CHANNELS": 32, "HEIGHT": 9, "WIDTH": 7}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


class Model(nn.Module):
    def __init__(self, channels, reduction):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)
        _randomize_norms(self)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        squeeze = F.adaptive_avg_pool2d(out, 1).flatten(1)
        gate = torch.sigmoid(self.fc2(torch.relu(self.fc1(squeeze))))
        out = out * gate[:, :, None, None]
        return torch.relu(out + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, REDUCTION]
