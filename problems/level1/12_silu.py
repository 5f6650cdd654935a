"""SiLU (swish) activation x * sigmoid(x) on a (batch, sequence, hidden) activation tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 48
SEQ = 4096
HIDDEN = 2731
SMALL = {"BATCH": 2, "SEQ": 17, "HIDDEN": 65}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return []
