"""Pre-LN encoder block on nn.MultiheadAttention (batch_first, no dropout), ReLU MLP, residuals."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 768
DIM = 768
HEADS = 12
SMALL = {"BATCH": 2, "SEQ": 19, "DIM": 32, "HEADS": 4}


def _randomize(module):
    """Non-identity norm affine parameters and non-zero projection biases (nn.MultiheadAttention
    starts its biases at 0), so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)
        if isinstance(m, nn.MultiheadAttention):
            nn.init.normal_(m.in_proj_bias, std=0.2)
            nn.init.normal_(m.out_proj.bias, std=0.2)


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        _randomize(self)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.relu(self.fc1(self.norm2(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
