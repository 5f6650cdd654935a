"""LayerNorm with affine parameters over the hidden dimension of a (batch, sequence, hidden) tensor."""

import torch
import torch.nn as nn

BATCH = 32
SEQ = 2048
HIDDEN = 7680
SMALL = {"BATCH": 2, "SEQ": 9, "HIDDEN": 100}


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        # Non-identity affine parameters, so that a kernel that drops them cannot pass.
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.2)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
