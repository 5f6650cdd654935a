"""GELU activation (exact, erf-based) applied elementwise."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 6000
COLS = 90000
SMALL = {"ROWS": 37, "COLS": 65}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
