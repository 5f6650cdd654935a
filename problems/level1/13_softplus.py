"""Softplus log(1 + exp(beta * x)) / beta with beta = 2 and a linear regime above the threshold."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 16384
COLS = 30000
BETA = 2.0
THRESHOLD = 10.0
SMALL = {"ROWS": 33, "COLS": 70}


class Model(nn.Module):
    def __init__(self, beta, threshold):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x):
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # Spread of 4 so that both branches (beta * x above and below the threshold) are exercised.
    return [4.0 * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [BETA, THRESHOLD]
