"""Embedding projection head (CLIP-style): bias-free Linear + L2 normalisation + learned scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32768
IN_FEATURES = 1536
EMBED_DIM = 768
SMALL = {"BATCH": 31, "IN_FEATURES": 56, "EMBED_DIM": 24}


class Model(nn.Module):
    def __init__(self, in_features, embed_dim):
        super().__init__()
        self.proj = nn.Linear(in_features, embed_dim, bias=False)
        self.scale = nn.Parameter(torch.tensor(2.5))

    def forward(self, x):
        return F.normalize(self.proj(x), dim=-1) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, EMBED_DIM]
