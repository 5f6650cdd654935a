"""ELU activation with alpha = 1.3: x for x > 0, alpha * (exp(x) - 1) otherwise."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 20000
COLS = 25000
ALPHA = 1.3
SMALL = {"ROWS": 41, "COLS": 53}


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [ALPHA]
