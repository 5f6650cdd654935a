# kernelskill solution for 11_gelu (thread bench-ecc7a6ce-level1-11_gelu)
# precision policy: default (cuda.matmul.allow_tf32=False, cudnn.allow_tf32=True; candidate, yardstick and baselines alike)
# measured: the reference itself, not timed on a GPU
# not verified: no evaluation passed on 11_gelu at full sizes (ROWS=6000, COLS=90000) on cuda
# launches no Triton kernel of ours: the reference module itself
"""kernelskill found nothing better for 11_gelu: no correct candidate was faster than PyTorch eager.

This file is the reference Model itself, renamed ModelNew and otherwise unchanged: it runs
under the caller's precision flags, as the user's module does."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

ROWS = 6000
COLS = 90000

class ModelNew(nn.Module):

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)
