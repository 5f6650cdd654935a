"""torch.split with uneven sizes, each part transformed differently."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        a, b, c = torch.split(x, [3, 5, 2], dim=1)
        return torch.cat([torch.relu(a), torch.tanh(b) * 2.0, c.exp()], dim=1)


def get_inputs():
    return [torch.randn(4, 10)]


def get_init_inputs():
    return []
