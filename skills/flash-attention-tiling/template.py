"""Fused attention: softmax(Q K^T * scale [+ mask]) V in one kernel, flash-attention style.

Its rewrite hook finds attention written by hand (matmul, scale, mask, softmax, optional identity
dropout, matmul), `F.scaled_dot_product_attention` and `nn.MultiheadAttention` (projections left
to the GEMM templates) and turns each into one `attention` op; the kernel keeps a running max and
sum over key tiles, so the score matrix never reaches memory, and skips the key tiles a causal
mask hides. Dots are fp32-accurate (fp16 parts or tf32x3) unless the policy allows TF32. See
authors/builtin/families/attention/.

Variants (ctx.params, read by `emit_attention` into the launch call's flags; SKILL.md says what
was measured): `head_major` orders the programs by head, then batch (a per-head mask stays in
L2); `split_d` splits a head dim that is no power of two into two power-of-two blocks (80 -> 64 +
16); `f16_parts` (on unless a variant turns it off) runs every product on scaled fp16 parts
(kernel_parts.py) where the dots would otherwise be tf32x3.
"""

from __future__ import annotations

from kernelskill.authors.builtin.templates.api import AttentionTemplate

TEMPLATE = AttentionTemplate()
