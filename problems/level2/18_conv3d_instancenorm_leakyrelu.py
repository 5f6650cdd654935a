"""Conv3d (3x3x3, same padding) + InstanceNorm3d (affine) + LeakyReLU(0.01): an nnU-Net encoder stage."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 32
HEIGHT = 112
WIDTH = 112
SMALL = {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 4, "DEPTH": 5, "HEIGHT": 7, "WIDTH": 8}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.InstanceNorm3d(out_channels, affine=True)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return F.leaky_relu(self.norm(self.conv(x)), negative_slope=0.01)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
