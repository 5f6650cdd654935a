"""L2 normalisation over the channel dimension (dim 1, strided) of an (N, C, L) tensor: F.normalize."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 768
LENGTH = 10240
SMALL = {"BATCH": 3, "CHANNELS": 37, "LENGTH": 50}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1, eps=1e-12)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
