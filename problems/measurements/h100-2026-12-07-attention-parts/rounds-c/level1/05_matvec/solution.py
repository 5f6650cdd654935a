# kernelskill solution for 05_matvec (thread bench-ecc7a6ce-level1-05_matvec)
# precision policy: default (cuda.matmul.allow_tf32=False, cudnn.allow_tf32=True; candidate, yardstick and baselines alike)
# measured: 0.99x eager, 1.11x torch.compile on NVIDIA H100 80GB HBM3
# verified for: 05_matvec at full sizes (M=40000, K=27000) on cuda
# launches no Triton kernel of ours: the reference module itself
"""kernelskill found nothing better for 05_matvec: no correct candidate was faster than PyTorch eager.

This file is the reference Model itself, renamed ModelNew and otherwise unchanged: it runs
under the caller's precision flags, as the user's module does."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

M = 40000
K = 27000

class ModelNew(nn.Module):

    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)
