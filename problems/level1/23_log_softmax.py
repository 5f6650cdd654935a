"""Log-softmax over the vocabulary of (batch, sequence, vocab) language-model logits."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1280
VOCAB = 50257
SMALL = {"BATCH": 2, "SEQ": 5, "VOCAB": 301}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [2.0 * torch.randn(BATCH, SEQ, VOCAB)]


def get_init_inputs():
    return []
