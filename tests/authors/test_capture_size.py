"""The author captures the reference at the size its candidate is evaluated at.

fx bakes Python values a model derives from its init arguments (a head count, a 1/sqrt(d)
scale, a layer count) into the traced graph. A graph captured at the SMALL size and run at full
size silently computes another model: on an H200, attention problems were wrong at full size
only. Here "full" sizes are tiny, so the interpreter can check the candidate at both sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from author_util import evaluate, generate
from kernelskill.authors.builtin.frontend.capture import CaptureError, capture
from kernelskill.eval.api import evaluate as evaluate_api
from kernelskill.eval.types import EvalOptions

PROBLEM = '''
import math

import torch
import torch.nn as nn

BATCH = 2
SEQ = 5
DIM = 24
HEADS = 4
LAYERS = 3
SMALL = {"DIM": 12, "HEADS": 2, "LAYERS": 2}


class Model(nn.Module):
    def __init__(self, dim, heads, layers):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(dim // heads)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.mix = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax((q @ k.transpose(-1, -2)) * self.scale, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        for layer in self.mix:
            y = torch.relu(layer(y))
        return y


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, LAYERS]
'''


def test_full_size_capture_bakes_full_size_constants_without_allocating() -> None:
    small, full = capture(PROBLEM, "<p>", "small"), capture(PROBLEM, "<p>", "full")
    exprs = [op.torch_expr for op in full.program.ops]
    assert any(", 3, 4, " in e for e in exprs if ".view(" in e)  # 4 heads, not SMALL's 2
    assert any("0.40824" in e for e in exprs)  # 1/sqrt(24 // 4), not 1/sqrt(12 // 2)
    assert len(full.program.ops) > len(small.program.ops)  # three layers, not two
    assert next(full.module.parameters()).device.type == "meta"


def test_candidate_is_correct_at_the_size_it_was_generated_for() -> None:
    for size in ("small", "full"):
        cand = generate(PROBLEM, size=size)
        r = evaluate(PROBLEM, cand.source, size=size)
        assert r.correct, (size, r.reason)
        assert r.custom_kernels >= 1


def _nonzero_problem(scaled: bool) -> str:
    """torch.nonzero has no meta kernel (its output shape depends on the values)."""
    scale = "1.0 / math.sqrt(cols)" if scaled else "0.5"
    return f'''
import math

import torch
import torch.nn as nn

ROWS = 6
COLS = 16
SMALL = {{"COLS": 9}}


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.scale = {scale}

    def forward(self, x):
        y = torch.relu(x) * self.scale
        return y, torch.nonzero(y).shape[0] + y.sum(dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
'''


def test_when_shapes_cannot_propagate_on_meta_the_small_capture_stands_in_only_if_size_free() -> None:
    cap = capture(_nonzero_problem(scaled=False), "<p>", "full")
    assert next(iter(cap.program.ops)).out.meta.shape == (6, 9)  # the small capture, on real tensors
    with pytest.raises(CaptureError):  # 1/sqrt(cols) would be baked at SMALL's value: refuse
        capture(_nonzero_problem(scaled=True), "<p>", "full")


# Suite problems whose captured graph differs between SMALL and full size (the H200 bench found the
# first two wrong at full size); the GPU machine checks them at full size.
SIZE_DEPENDENT = ["level2/06_bmm_scale_softmax_dropout", "level3/06_transformer_encoder_block",
                  "level3/10_densenet_dense_block", "level3/13_gpt_decoder_block"]


@pytest.mark.gpu
@pytest.mark.parametrize("key", SIZE_DEPENDENT)
def test_size_dependent_suite_problems_are_correct_at_full_size_on_gpu(key: str) -> None:
    src = (Path(__file__).resolve().parents[2] / "problems" / f"{key}.py").read_text()
    cand = generate(src, size="full")
    r = evaluate_api(src, cand.source, EvalOptions(device="cuda", size="full", trials=2, baselines=False),
                     problem_name=key)
    assert r.correct, r.reason
    assert r.custom_kernels >= 1


LOOP = '''
import torch
import torch.nn as nn

BATCH = 3
STEPS = 6
DIM = 10
SMALL = {"STEPS": 4}


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.rec = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        proj = self.inp(x)
        h = x.new_zeros(x.shape[0], x.shape[2])
        outs = []
        for t in range(x.size(1)):  # plain fx cannot iterate over a traced size
            h = torch.tanh(proj[:, t] + self.rec(h))
            outs.append(h * 0.5)
        return torch.stack(outs, dim=1)


def get_inputs():
    return [torch.randn(BATCH, STEPS, DIM)]


def get_init_inputs():
    return [DIM]
'''


@pytest.mark.parametrize("size", ["small", "full"])
def test_time_loop_over_a_traced_size_unrolls_at_the_evaluated_size(size: str) -> None:
    steps = {"small": 4, "full": 6}[size]
    cap = capture(LOOP, "<p>", size)
    assert sum(op.kind == "tanh" for op in cap.program.ops) == steps
    cand = generate(LOOP, size=size)
    r = evaluate(LOOP, cand.source, size=size)
    assert r.correct, r.reason
    assert r.custom_kernels >= 1


def test_data_dependent_control_flow_is_still_a_capture_error() -> None:
    ret = "        return torch.stack(outs, dim=1)"
    src = LOOP.replace(ret, "        if x.sum() > 0:\n            outs = outs[::-1]\n" + ret)
    with pytest.raises(CaptureError):
        capture(src, "<p>", "small")


def test_an_unrolled_graph_beyond_the_node_limit_is_a_capture_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelskill.authors.builtin.frontend import capture as capture_mod

    monkeypatch.setattr(capture_mod, "MAX_UNROLLED_NODES", 10)
    with pytest.raises(CaptureError, match="limit 10"):
        capture(LOOP, "<p>", "small")
