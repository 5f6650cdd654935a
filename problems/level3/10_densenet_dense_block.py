"""DenseNet dense block: 6 layers of BN-ReLU-Conv1x1-BN-ReLU-Conv3x3 (growth 32), each concatenated."""

import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 96
GROWTH = 32
LAYERS = 6
HEIGHT = 56
WIDTH = 56
SMALL = {"BATCH": 2, "IN_CHANNELS": 6, "GROWTH": 4, "LAYERS": 3, "HEIGHT": 9, "WIDTH": 11}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


def _dense_layer(cin, growth):
    bottleneck = 4 * growth
    return nn.Sequential(
        nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, bottleneck, 1, bias=False),
        nn.BatchNorm2d(bottleneck), nn.ReLU(), nn.Conv2d(bottleneck, growth, 3, padding=1, bias=False),
    )


class Model(nn.Module):
    def __init__(self, in_channels, growth, layers):
        super().__init__()
        self.layers = nn.ModuleList(_dense_layer(in_channels + i * growth, growth) for i in range(layers))
        _randomize_norms(self)

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, dim=1)))
        return torch.cat(features, dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, GROWTH, LAYERS]
