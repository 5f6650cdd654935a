"""Launch-plan caches of the norm launchers (runtime/norms.py's _nrm_run): the layout of x, the fused
chains' collapsed geometry, the kernel path, block sizes and grids are planned once per operand
signature on meta tensors, and the autotuner's pick is kept with the plan. Calls alternating
shapes, strided views and broadcast chain operands stay equal to PyTorch and get one plan per
signature; an earlier signature reuses its plan without the autotuner; layouts that copy operands
are planned per call; BatchNorm's running statistics (data) are updated on every call, as eager."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch
from author_util import count_autotuner_runs, generate
from kernelskill.eval.harness import seeded
from kernelskill.eval.problem import exec_module, load_problem
from kernelskill.eval.static.checks import run_static_checks

PROBLEM = """
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = {{}}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = {module}
{init}

    def forward(self, {args}):
        return {body}

def get_inputs():
    return [{inputs}]

def get_init_inputs():
    return []
"""
AFFINE = ("        nn.init.normal_(self.n.weight, 1.0, 0.2)\n"
          "        nn.init.normal_(self.n.bias, 0.0, 0.2)")
# Plan tuple fields (runtime _nrm_plan): shape, path, args, kw, grid, pick, pt, et, sp.
PATH, PICK, STATS = 1, 5, 8
ROW, TWO_LEVEL, COL = 0, 1, 2


def _source(module: str, body: str, inputs: str, args: str = "x", init: str = AFFINE) -> str:
    return PROBLEM.format(module=module, init=init or "        pass", args=args, body=body, inputs=inputs)


def _module(source: str, fused: str = "") -> types.ModuleType:
    """The generated candidate, after checking that the norm template's planned launcher (with
    the fused chain `fused`, a generated-code fragment) is in it and that it passes the static
    checks: a shape-keyed plan is not output caching."""
    cand = generate(source)
    assert "_nrm_plan(" in cand.source and fused in cand.source, cand.source
    assert run_static_checks(cand.source) == []
    return exec_module(cand.source, "norm_plans_candidate.py", "norm_plans_candidate")


def _plans(mod: types.ModuleType) -> dict:
    caches = [v for k, v in vars(mod).items() if k.startswith("_plans") and isinstance(v, dict)]
    assert len(caches) == 1
    return caches[0]


def _models(source: str, fused: str = "") -> tuple[torch.nn.Module, torch.nn.Module, types.ModuleType]:
    """(reference, candidate, candidate module) with the same parameters and buffers."""
    mod = _module(source, fused)
    prob = load_problem(source, "small")
    seeded(0)
    ref = prob.model_cls()
    seeded(0)
    new = mod.ModelNew()
    return ref, new, mod


def test_layer_norm_plans_per_signature() -> None:
    """Rows in registers, a broadcast epilogue operand and a strided view (column tiles): one plan
    each; the first signature, called again, reuses its plan and the autotuner's pick."""
    src = _source("nn.LayerNorm(40)", "F.gelu(self.n(x)) * y", "torch.randn(3, 5, 40), torch.randn(40)",
                  args="x, y")
    ref, new, mod = _models(src)
    runs = count_autotuner_runs(mod)
    calls = [(torch.randn(3, 5, 40) + 2, torch.randn(40)),
             (torch.randn(4, 40), torch.randn(4, 1)),  # epilogue operand broadcast along rows
             (torch.randn(3, 40, 5).transpose(1, 2), torch.randn(40))]  # the reduced dim strided
    with torch.no_grad():
        for x, y in calls:
            torch.testing.assert_close(new(x, y), ref(x, y), rtol=1e-5, atol=1e-5)
        plans = _plans(mod)
        assert [p[PATH] for p in plans.values()] == [ROW, ROW, COL]
        assert all(p[PICK] for p in plans.values())  # each kept its autotuning pick
        first = next(iter(plans.values()))
        tuned = sum(runs.values())
        x, y = torch.randn(3, 5, 40) - 1, torch.randn(40)
        torch.testing.assert_close(new(x, y), ref(x, y), rtol=1e-5, atol=1e-5)
    assert len(plans) == 3 and next(iter(plans.values())) is first
    assert sum(runs.values()) == tuned  # launched with the kept pick, not through the autotuner


def test_fused_prologue_plans_and_materialised_chain_operand() -> None:
    """A fused prologue's operands (broadcast, strided) are collapsed once per signature; one that
    the collapse cannot express (5 dims that merge nowhere) is copied, so planned per call."""
    src = _source("nn.LayerNorm(40)", "F.gelu(self.n(x * 0.5 + y)) + x",
                  "torch.randn(6, 40), torch.randn(40)", args="x, y")
    # The launcher hands the runtime two prologue operands and one epilogue operand.
    ref, new, mod = _models(src, fused="('w', 'b'), (2, 1), ")
    tangled = lambda: torch.randn(40, 3, 2, 3, 2).permute(4, 3, 2, 1, 0)  # noqa: E731  (2, 3, 2, 3, 40)
    calls = [(torch.randn(6, 40), torch.randn(40)),
             (torch.randn(40, 6).t(), torch.randn(6, 1)),
             (tangled(), torch.randn(40)),
             (tangled(), torch.randn(40)),
             (torch.randn(6, 40), torch.randn(40))]
    with torch.no_grad():
        for x, y in calls:
            torch.testing.assert_close(new(x, y), ref(x, y), rtol=1e-5, atol=1e-5)
    plans = list(_plans(mod).values())
    assert len(plans) == 3 and plans[2] == ()  # the tangled operand: planned per call
    assert all(p[PICK] for p in plans[:2])


def test_group_norm_paths_and_copying_layout() -> None:
    """Rows in registers and two-level statistics by group size; a non-contiguous input is copied
    (the launcher makes x contiguous), so that signature is planned per call."""
    src = _source("nn.GroupNorm(2, 4)", "torch.relu(self.n(x))", "torch.randn(2, 4, 5, 7)")
    ref, new, mod = _models(src)
    runs = count_autotuner_runs(mod)
    perm = lambda: torch.randn(2, 7, 5, 4).permute(0, 3, 2, 1)  # noqa: E731  (2, 4, 5, 7), strided
    calls = [torch.randn(2, 4, 5, 7) * 2 + 3,
             torch.randn(1, 4, 97, 89) - 2,  # groups of 17266 elements: two-level
             perm(), perm()]
    with torch.no_grad():
        for x in calls:
            torch.testing.assert_close(new(x), ref(x), rtol=1e-5, atol=1e-5)
        plans = _plans(mod)
        paths = [p[PATH] if p else () for p in plans.values()]
        assert paths == [ROW, TWO_LEVEL, ()]
        two = list(plans.values())[1]
        assert two[PICK] and two[STATS][4]  # apply and statistics picks
        tuned = sum(runs.values())
        for x in (torch.randn(1, 4, 97, 89), torch.randn(2, 4, 5, 7)):
            torch.testing.assert_close(new(x), ref(x), rtol=1e-5, atol=1e-5)
    assert len(plans) == 3
    assert sum(runs.values()) == tuned


@pytest.mark.parametrize("module,shapes", [
    ("nn.BatchNorm2d(5)", [(3, 5, 11, 13), (2, 5, 7, 9), (3, 5, 11, 13)]),
    ("nn.BatchNorm1d(6, momentum=None)", [(5, 6, 19), (7, 6), (5, 6, 19)]),
], ids=["bn2d", "bn1d-cumulative"])
def test_batch_norm_running_statistics_per_call(module: str, shapes: list[tuple[int, ...]]) -> None:
    """Training-mode batch norm: outputs, running mean / var and num_batches_tracked equal eager's
    after every call, across alternating shapes, a repeated signature and a strided input."""
    src = _source(module, "self.n(x)", "torch.randn(" + ", ".join(map(str, shapes[0])) + ")")
    ref, new, mod = _models(src)
    xs = [torch.randn(*s) * 3 + 5 for s in shapes]
    xs.append(torch.randn(*shapes[0][::-1]).permute(*range(len(shapes[0]) - 1, -1, -1)))  # strided
    with torch.no_grad():
        for x in xs:
            torch.testing.assert_close(new(x), ref(x), rtol=1e-4, atol=1e-4)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                torch.testing.assert_close(getattr(new.n, name), getattr(ref.n, name), rtol=1e-5, atol=1e-5)
    assert int(new.n.num_batches_tracked) == len(xs)
    plans = list(_plans(mod).values())
    assert len(plans) == 3 and plans[2] == ()  # two shapes, and the strided input copied per call


def test_batch_norm_eval_reads_running_statistics_each_call() -> None:
    """Eval mode normalizes with the running statistics: changed between calls, the next call uses
    the new values (the plan holds no tensor)."""
    init = AFFINE + "\n        self.n.eval()"
    src = _source("nn.BatchNorm2d(5)", "self.n(x)", "torch.randn(3, 5, 4, 6)", init=init)
    ref, new, mod = _models(src)
    x = torch.randn(3, 5, 4, 6)
    with torch.no_grad():
        for step in range(3):
            for m in (ref, new):
                m.n.running_mean.add_(0.5 * step)
                m.n.running_var.mul_(1.0 + step)
            torch.testing.assert_close(new(x), ref(x), rtol=1e-5, atol=1e-5)
    assert len(_plans(mod)) == 1


@pytest.mark.parametrize("path", ["level1/16_layernorm_last_dim", "level1/17_rmsnorm", "level1/18_groupnorm",
                                  "level1/19_batchnorm2d", "level1/20_instancenorm2d",
                                  "level1/21_l2norm_channels"])
def test_suite_candidates_pass_static_checks(path: str) -> None:
    src = (Path(__file__).resolve().parents[2] / "problems" / f"{path}.py").read_text()
    cand = generate(src)
    assert "_nrm_plan(" in cand.source
    assert run_static_checks(cand.source) == []
