"""ConvTranspose2d (upsample x2, kernel 4) + InstanceNorm2d (affine) + ReLU: a GAN / decoder stage."""

import torch
import torch.nn as nn

BATCH = 40
IN_CHANNELS = 224
OUT_CHANNELS = 96
HEIGHT = 56
WIDTH = 56
SMALL = {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 6, "HEIGHT": 7, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)
        self.norm = nn.InstanceNorm2d(out_channels, affine=True)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
