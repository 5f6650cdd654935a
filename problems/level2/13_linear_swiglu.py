"""SwiGLU gate of a LLaMA-style MLP: silu(x @ W_gate.T) * (x @ W_up.T), two bias-free GEMMs."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 2048
DIM = 2048
HIDDEN = 5632
SMALL = {"TOKENS": 23, "DIM": 48, "HIDDEN": 70}


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return F.silu(self.w_gate(x)) * self.w_up(x)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
