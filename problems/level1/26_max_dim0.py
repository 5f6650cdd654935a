"""Max reduction over the leading (outermost, strided) dimension: (R, C) -> (C,) values."""

import torch
import torch.nn as nn

ROWS = 3500
COLS = 300000
SMALL = {"ROWS": 33, "COLS": 70}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim).values


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [0]
