"""F.interpolate (nearest) between two pointwise stages."""


import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(F.interpolate(torch.relu(x), scale_factor=2, mode="nearest")) * 2.0


def get_inputs():
    return [torch.randn(2, 3, 4, 4)]


def get_init_inputs():
    return []
