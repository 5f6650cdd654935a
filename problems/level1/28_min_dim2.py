"""Min reduction over the height dimension of an (N, C, H, W) tensor: torch.amin(x, dim=2) -> (N, C, W)."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 192
HEIGHT = 1400
WIDTH = 128
SMALL = {"BATCH": 2, "CHANNELS": 5, "HEIGHT": 19, "WIDTH": 7}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.amin(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [2]
