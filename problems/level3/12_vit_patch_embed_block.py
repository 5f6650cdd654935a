"""ViT-S front end: 16x16 patch embedding, class token, position embedding, one SDPA block, final LN."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IMAGE = 224
PATCH = 16
DIM = 384
HEADS = 6
MLP_RATIO = 4
SMALL = {"BATCH": 2, "IMAGE": 48, "DIM": 24}


def _randomize_norms(module):
    """Non-identity norm affine parameters, so that a kernel that drops them cannot pass."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm):
            nn.init.normal_(m.weight, mean=1.0, std=0.2)
            nn.init.normal_(m.bias, mean=0.0, std=0.2)


class Model(nn.Module):
    def __init__(self, image, patch, dim, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        tokens = (image // patch) ** 2 + 1
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, tokens, dim))
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        _randomize_norms(self)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        ctx = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(ctx.transpose(1, 2).reshape(b, t, d))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [IMAGE, PATCH, DIM, HEADS, MLP_RATIO]
