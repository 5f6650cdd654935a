"""Inclusive prefix product (cumprod) along the last dimension, on signed factors of magnitude near 1."""

import torch
import torch.nn as nn

ROWS = 60000
COLS = 8960
SMALL = {"ROWS": 13, "COLS": 400}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


def get_inputs():
    # |x| = 1 + 0.01 * randn keeps the running product within about e^(+-4) over 8960 steps;
    # random signs make the products signed, so a kernel cannot assume positive factors.
    magnitude = 1.0 + 0.01 * torch.randn(ROWS, COLS)
    sign = torch.where(torch.randn(ROWS, COLS) >= 0, 1.0, -1.0)
    return [magnitude * sign]


def get_init_inputs():
    return [1]
