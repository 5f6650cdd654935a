"""An nn.GRU (no template) followed by a linear head on the last step."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.rnn = nn.GRU(d, h, batch_first=True)
        self.head = nn.Linear(h, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return torch.sigmoid(self.head(out[:, -1]))


def get_inputs():
    return [torch.randn(3, 4, 6)]


def get_init_inputs():
    return [6, 8]
