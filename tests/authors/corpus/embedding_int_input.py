"""nn.Embedding on integer token ids, then a mean and a linear head."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, 3)

    def forward(self, ids):
        return self.head(torch.relu(self.emb(ids).mean(dim=1)))


def get_inputs():
    return [torch.randint(0, 20, (4, 6))]


def get_init_inputs():
    return [20, 8]
