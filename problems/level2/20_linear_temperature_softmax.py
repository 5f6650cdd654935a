"""Output head: Linear to a 32000-way vocabulary, divide by a temperature, softmax -> probabilities."""

import torch
import torch.nn as nn

TOKENS = 1536
DIM = 1024
VOCAB = 32000
TEMPERATURE = 0.7
SMALL = {"TOKENS": 17, "DIM": 40, "VOCAB": 203}


class Model(nn.Module):
    def __init__(self, dim, vocab, temperature):
        super().__init__()
        self.head = nn.Linear(dim, vocab)
        self.temperature = temperature

    def forward(self, x):
        return torch.softmax(self.head(x) / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, VOCAB, TEMPERATURE]
