"""The attention family (skills/flash-attention-tiling) under the interpreter: which spellings of
attention its rewrite recognises (hand-written, SDPA, nn.MultiheadAttention; causal, additive and
boolean masks, a mask before the scale, odd sequence lengths; ReLU and sigmoid weights) and
which it leaves alone (other weights, softmax over another dim), each first candidate judged by
the real evaluator (static checks, float64 reference, perturbed inputs) at SMALL sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from author_util import generate, templates_used
from kernelskill.authors.builtin.families.attention.match import rewrite_attention
from kernelskill.authors.builtin.frontend.capture import capture
from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

ATTN = "flash-attention-tiling"
LEVEL3 = Path(__file__).resolve().parents[2] / "problems" / "level3"
OPTIONS = EvalOptions(device="cpu", size="small", timing=False, baselines=False, trials=2)

PROBLEM = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, {args}):
{body}
def get_inputs():
    return [{inputs}]
def get_init_inputs():
    return []
'''


def make(body: str, inputs: str, args: str = "q, k, v", init: str = "pass") -> str:
    ind = lambda s, n: "\n".join(" " * n + ln for ln in s.strip("\n").split("\n"))  # noqa: E731
    return PROBLEM.format(init=ind(init, 8), body=ind(body, 8), inputs=inputs, args=args)


QKV = "torch.randn(2, 3, {t}, 8), torch.randn(2, 3, {t}, 8), torch.randn(2, 3, {t}, 8)"


def judged(src: str, kernels: int = 1) -> str:
    """The first candidate's source, after asserting it uses the attention kernel (in `kernels`
    regions) and is correct by the evaluator."""
    cand = generate(src)
    assert ATTN in templates_used(cand), cand.source
    assert not cand.author_state.emit_failures, cand.author_state.emit_failures
    # fp16 parts under the default policy, as on a GPU (template.py: where the dots are tf32x3)
    assert cand.source.count("_attn_parts_run(_attention_kernel") == kernels, cand.source
    result = evaluate(src, cand.source, OPTIONS)
    assert result.correct, result.reason
    assert any(n.startswith("_attention_kernel") for n in result.kernel_names), result.kernel_names
    return cand.source


def attention_ops(src: str) -> list:
    program = rewrite_attention(capture(src, "<p>", "small").program)
    return [] if program is None else [op for op in program.ops if op.kind == "attention"]


# Hand-written spellings on T = 37 (no multiple of any block): a division by a run-time number,
# an additive mask after the scale, a boolean mask filled with a finite value before the scale, and
# the causal triu(1) mask (index arithmetic, no mask operand).
HAND_WRITTEN = """
t = q.shape[-2]
a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1]), dim=-1) @ v
b = (q @ k.transpose(-2, -1) * 0.25 + m).softmax(-1) @ v
c = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(m > 1.0, -1e4) * 0.35, dim=-1) @ v
future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
d = torch.softmax((q @ k.transpose(-2, -1) / 3.0).masked_fill(future, float('-inf')), dim=-1) @ v
return a, b, c, d
"""
# bmm on 3-D operands with a scale on the left and identity dropout (other head dims on both
# sides), SDPA causal with a scale, SDPA with an additive and with a boolean mask.
OTHER_FORMS = """
s = 0.3 * torch.bmm(x, y.transpose(1, 2))
a = torch.bmm(self.drop(F.softmax(s, dim=2)), z)
b = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.2)
c = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
d = F.scaled_dot_product_attention(q, k, v, attn_mask=m > -1.5)
return a, b, c, d
"""


def test_hand_written_attention() -> None:
    src = make(HAND_WRITTEN, QKV.format(t=37) + ", torch.randn(37, 37)", "q, k, v, m")
    ops = attention_ops(src)
    assert [(op.attrs["mask"], op.attrs["mask_first"], op.attrs["causal"]) for op in ops] == [
        (0, False, False), (1, False, False), (2, True, False), (0, False, True)]
    judged(src, kernels=4)


def test_bmm_and_sdpa_forms() -> None:
    inputs = ("torch.randn(4, 21, 16), torch.randn(4, 45, 16), torch.randn(4, 45, 12), "
              + QKV.format(t=33) + ", torch.randn(2, 1, 33, 33)")
    src = make(OTHER_FORMS, inputs, "x, y, z, q, k, v, m", init="self.drop = nn.Dropout(0.0)")
    assert len(attention_ops(src)) == 4
    judged(src, kernels=4)


def test_multihead_attention_modules() -> None:
    """nn.MultiheadAttention self-attention, seq-first with a float mask and batch-first with a
    boolean one: projections become GEMMs, the attention reads the packed projection."""
    init = ("self.a = nn.MultiheadAttention(32, 4)\n"
            "self.b = nn.MultiheadAttention(32, 4, batch_first=True)\n"
            "for p in (self.a.in_proj_bias, self.b.out_proj.bias):\n"
            "    nn.init.normal_(p, std=0.2)")
    body = ("y = self.a(x, x, x, attn_mask=m)[0]\n"
            "xt = x.transpose(0, 1)\n"
            "z, _ = self.b(xt, xt, xt, attn_mask=m > 1.0, need_weights=False)\n"
            "return y, z")
    src = make(body, "torch.randn(13, 2, 32), torch.randn(13, 13)", "x, m", init)
    ops = attention_ops(src)
    assert [op.attrs["packed"] for op in ops] == [(4, False), (4, True)]
    judged(src, kernels=2)


# Elementwise weights: ReLU under a causal mask (tiles above the diagonal skipped: relu(-inf) is
# 0), sigmoid after an additive mask, ReLU after a finite fill applied before the scale.
ELEMENTWISE = """
t = q.shape[-2]
future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
a = F.relu((q @ k.transpose(-2, -1) * 0.3).masked_fill(future, float('-inf'))) @ v
b = torch.sigmoid(q @ k.transpose(-2, -1) / 2.0 + m) @ v
c = torch.relu(torch.matmul(q, k.transpose(-2, -1)).masked_fill(m > 1.0, -3.0) * 0.5) @ v
return a, b, c
"""


def test_relu_and_sigmoid_weights() -> None:
    src = make(ELEMENTWISE, QKV.format(t=37) + ", torch.randn(37, 37)", "q, k, v, m")
    ops = attention_ops(src)
    assert [(op.attrs["weights"], op.attrs["causal"], op.attrs["mask_first"]) for op in ops] == [
        ("relu", True, False), ("sigmoid", False, False), ("relu", False, True)]
    source = judged(src, kernels=3)
    assert "'weights': 'relu'" in source and "'weights': 'sigmoid'" in source


NOT_ATTENTION = {
    "tanh_weights": "return torch.tanh(q @ k.transpose(-2, -1) * 0.3) @ v",
    "softmax_other_dim": "return torch.softmax(q @ k.transpose(-2, -1), dim=-2) @ v",
    "scores_read_twice": "s = q @ k.transpose(-2, -1)\nreturn torch.softmax(s, dim=-1) @ v + s.sum()",
}


@pytest.mark.parametrize("case", sorted(NOT_ATTENTION))
def test_other_algebra_is_left_to_other_templates(case: str) -> None:
    assert attention_ops(make(NOT_ATTENTION[case], QKV.format(t=11))) == []


def test_other_weights_stay_correct_without_the_kernel() -> None:
    src = make(NOT_ATTENTION["tanh_weights"], QKV.format(t=11))
    cand = generate(src)
    assert ATTN not in templates_used(cand)
    assert evaluate(src, cand.source, OPTIONS).correct


@pytest.mark.parametrize("name", ["06_transformer_encoder_block", "12_vit_patch_embed_block",
                                  "13_gpt_decoder_block", "14_causal_self_attention",
                                  "15_sdpa_additive_mask", "16_multihead_attention_block",
                                  "17_vit_encoder_block", "18_relu_gated_attention"])
def test_suite_problems(name: str) -> None:
    src = (LEVEL3 / f"{name}.py").read_text()
    source = judged(src)
    if name in ("13_gpt_decoder_block", "14_causal_self_attention", "18_relu_gated_attention"):
        assert "'causal': True" in source
