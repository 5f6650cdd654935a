"""The flash-attention-tiling variants under the interpreter: `head_major` (programs ordered by
head, then batch) and `split_d` (head dims split into two power-of-two blocks), alone and
together, against PyTorch's attention in float64; the split sizes; and that each variant changes
the generated source (a move the planner can try), `f16_parts: false` (the tf32x3 kernel) among
them, while the default runs on fp16 parts where the dots would be tf32x3."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
import triton
from author_util import generate
from kernelskill.authors.builtin.families.attention.kernel import _attn_fwd_kernel
from kernelskill.authors.builtin.runtime.attention import (
    _ATTN_ADD,
    _ATTN_KEEP,
    _ATTN_NONE,
    _attn_run,
    _attn_split,
)
from kernelskill.eval.api import evaluate
from kernelskill.eval.types import EvalOptions

ATTN = "flash-attention-tiling"
VARIANTS: list[dict[str, Any]] = [{}, {"head_major": True}, {"split_d": True},
                                  {"head_major": True, "split_d": True}]
OPTIONS = EvalOptions(device="cpu", size="small", timing=False, baselines=False, trials=2)


@pytest.mark.parametrize(("n", "blocks"), [
    (80, (64, 16)), (96, (64, 32)), (48, (32, 16)), (72, (64, 16)), (160, (128, 32)),
    (64, (64, 0)), (100, (128, 0)), (17, (32, 0)), (12, (16, 0)), (32, (32, 0)), (200, (256, 0))])
def test_split_sizes(n: int, blocks: tuple[int, int]) -> None:
    assert _attn_split(n) == blocks


class _Spy:
    """The autotuned kernel, recording each launch's keyword arguments."""

    def __init__(self, kern: Any) -> None:
        self.kern, self.launches = kern, []

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **kw: Any) -> Any:
            self.launches.append(kw)
            return self.kern[grid](*args, **kw)
        return launch


def _kernel() -> _Spy:
    # Small tiles so that T = 37 takes several query and key tiles.
    cfg = triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4)
    return _Spy(triton.autotune([cfg], key=["TQ", "TK", "D", "DV"])(_attn_fwd_kernel))


def _reference(q, k, v, mask, causal: bool, scale: float, weights: str) -> torch.Tensor:  # noqa: ANN001
    q, k, v = q.double(), k.double(), v.double()
    if weights == "softmax":
        m = mask.double() if mask is not None and mask.dtype != torch.bool else mask
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale)
    s = q @ k.transpose(-2, -1) * scale + mask.double()
    return torch.relu(s) @ v


# (name, mask shape or None, mask mode, causal, weights). Z = 2, H = 3 (unequal, so a swapped
# batch / head order lands in the wrong place), T = 37 queries and keys.
CASES = [
    ("per_head_bias", (3, 37, 37), _ATTN_ADD, False, "softmax"),
    ("causal", None, _ATTN_NONE, True, "softmax"),
    ("bool_mask", (2, 1, 37, 37), _ATTN_KEEP, False, "softmax"),
    ("relu_bias", (3, 37, 37), _ATTN_ADD, False, "relu"),
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "+".join(v) or "default")
@pytest.mark.parametrize(("name", "mshape", "mode", "causal", "weights"), CASES, ids=[c[0] for c in CASES])
def test_variants_match_sdpa(variant: dict[str, Any], name: str, mshape: tuple[int, ...] | None,
                             mode: int, causal: bool, weights: str) -> None:
    torch.manual_seed(0)
    z, h, t, d, dv, scale = 2, 3, 37, 48, 80, 0.2  # 48 -> 32 + 16, 80 -> 64 + 16
    q, k, v = torch.randn(z, h, t, d), torch.randn(z, h, t, d), torch.randn(z, h, t, dv)
    mask = None
    if mshape is not None:
        mask = torch.randn(mshape) > -0.5 if mode == _ATTN_KEEP else 0.5 * torch.randn(mshape)
        if mode == _ATTN_KEEP:
            mask[..., 0] = True  # no fully masked row: SDPA's NaN is not what this compares
    p = {"kt": False, "packed": None, "divide": False, "mask": mode, "fill": "-inf", "mask_first": False,
         "causal": causal, "bthd": False, "weights": weights, **variant}
    kern = _kernel()
    out = _attn_run(kern, q, k, v, mask, scale, p)
    ref = _reference(q, k, v, mask, causal, scale, weights)
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=2e-5)
    (kw,) = kern.launches
    split = variant.get("split_d", False)
    assert kw["HEAD_MAJOR"] == variant.get("head_major", False)
    assert (kw["BLOCK_D"], kw["BLOCK_D1"], kw["BLOCK_DV"], kw["BLOCK_DV1"]) == (
        (32, 16, 64, 16) if split else (64, 0, 128, 0))


PROBLEM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
SMALL = {}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(3, 29, 29))
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias, scale=0.15)
def get_inputs():
    return [torch.randn(2, 3, 29, 48), torch.randn(2, 3, 29, 48), torch.randn(2, 3, 29, 80)]
def get_init_inputs():
    return []
'''


def test_each_variant_is_a_move_and_judged_correct() -> None:
    default = generate(PROBLEM).source
    assert "_attn_parts_run(" in default and "'f16_parts': True" in default  # on where dots are tf32x3
    assert "'head_major'" not in default and "'split_d'" not in default
    assert generate(PROBLEM, skill=ATTN).source == default
    for same in ({"head_major": False}, {"f16_parts": True}):
        assert generate(PROBLEM, skill=ATTN, params=same).source == default
    sources = {}
    # Judged: one candidate per kernel with every flag on (the kernel tests above and
    # test_attention_parts.py check each flag's numerics); the others must be distinct moves.
    judged = ({"head_major": True, "split_d": True}, {"f16_parts": False, "head_major": True})
    for variant in [*VARIANTS[1:], {"f16_parts": False}, judged[1]]:
        cand = generate(PROBLEM, skill=ATTN, params=variant)
        assert cand.source != default
        for f, on in variant.items():
            assert (f"'{f}': True" in cand.source) == on
        assert ("return _attn_run(" in cand.source) == (variant.get("f16_parts") is False)
        if variant in judged:
            result = evaluate(PROBLEM, cand.source, OPTIONS)
            assert result.correct, result.reason
        sources[tuple(variant.items())] = cand.source
    assert len(set(sources.values())) == len(sources)
