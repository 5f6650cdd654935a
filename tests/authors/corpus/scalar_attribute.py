"""Python float attributes set in __init__ from the constructor's arguments."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha, beta):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x):
        return self.alpha * torch.tanh(x) + self.beta * x


def get_inputs():
    return [torch.randn(6, 11)]


def get_init_inputs():
    return [0.7, -1.3]
