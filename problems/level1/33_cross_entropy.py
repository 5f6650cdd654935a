"""Per-token cross-entropy with label smoothing 0.1 over a 32000-way vocabulary (reduction='none')."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 24576
VOCAB = 32000
LABEL_SMOOTHING = 0.1
SMALL = {"TOKENS": 37, "VOCAB": 101}


class Model(nn.Module):
    def __init__(self, label_smoothing):
        super().__init__()
        self.label_smoothing = label_smoothing

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, reduction="none", label_smoothing=self.label_smoothing)


def get_inputs():
    logits = 2.0 * torch.randn(TOKENS, VOCAB)
    targets = torch.randint(0, VOCAB, (TOKENS,))
    return [logits, targets]


def get_init_inputs():
    return [LABEL_SMOOTHING]
