"""Hardtanh with asymmetric bounds: clamp(x, -0.75, 1.25) on an image-shaped tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 96
HEIGHT = 300
WIDTH = 300
MIN_VAL = -0.75
MAX_VAL = 1.25
SMALL = {"BATCH": 2, "CHANNELS": 3, "HEIGHT": 17, "WIDTH": 19}


class Model(nn.Module):
    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
