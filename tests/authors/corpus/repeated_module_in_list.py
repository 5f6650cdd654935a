"""One module object repeated in a ModuleList (three calls, one set of weights)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        layer = nn.Linear(d, d)
        self.layers = nn.ModuleList([layer, layer, layer])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def get_inputs():
    return [torch.randn(4, 10)]


def get_init_inputs():
    return [10]
