"""A large constant weight made in the forward (torch.full on sizes fixed at init) and matmul'd."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        self.lin = nn.Linear(d_in, d_in)

    def forward(self, x):
        avg = torch.full((self.d_in, self.d_out), 1.0 / self.d_in)
        return torch.relu(self.lin(x)) @ avg.to(x.dtype) + torch.zeros(self.d_out).add(0.25)


def get_inputs():
    return [torch.randn(6, 96)]


def get_init_inputs():
    return [96, 80]
