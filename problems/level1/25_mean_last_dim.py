"""Mean reduction over the last (contiguous) dimension of a matrix: (R, C) -> (R,)."""

import torch
import torch.nn as nn

ROWS = 65536
COLS = 16000
SMALL = {"ROWS": 70, "COLS": 129}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [-1]
