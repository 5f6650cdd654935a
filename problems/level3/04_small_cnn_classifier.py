"""Small CNN classifier: four conv-BN-ReLU stages (three with 2x2 max pooling), global pool, linear head."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IMAGE = 192
NUM_CLASSES = 100
SMALL = {"BATCH": 2, "IMAGE": 24, "NUM_CLASSES": 7}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


def _stage(cin, cout, pool):
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            _stage(3, 32, pool=True),
            _stage(32, 64, pool=True),
            _stage(64, 128, pool=True),
            _stage(128, 256, pool=False),
        )
        self.head = nn.Linear(256, num_classes)
        _randomize_norms(self)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [NUM_CLASSES]
