"""depthwise-conv-direct's variants: `index_math: hoisted` (per-row / per-column bounds, one pointer
per kernel row), `tiles: rows_per_thread` (the autotuner's tiles give each thread columns of all
BLOCK_R rows) and `prologue: materialize` (no fused prologue: the chain gets its own pointwise
kernel). Each changes the depthwise kernel or its launch where it acts (the MobileNet block's
hottest kernel on the H100, tests/authors/test_touches.py); the default values emit the default's
source; a bad value costs the region, not the candidate; every variant matches eager under the
interpreter (1-3-D, stride 1 and 2, with and without bias, a fused prologue and epilogue, a
channel multiplier, partial tiles, 64-bit indexing), and the hoisted kernel compiles for sm_90."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
from author_util import against_eager, author, generate, task_with_best
from kernelskill.authors.base import AuthorTask, same_code
from kernelskill.nodes.moves import by_limiter
from kernelskill.skill_index import load_skills
from kernelskill.state.records import Attempt, Plan, source_hash

SKILL = "depthwise-conv-direct"
MOBILENET = (Path(__file__).resolve().parents[2] / "problems" / "level3" /
             "05_mobilenet_inverted_residual.py").read_text()
VARIANTS = load_skills()[SKILL].all_variants()[1:]
KERNEL_VARIANTS = [v for v in VARIANTS if "prologue" not in v]
MATERIALIZE = {"prologue": "materialize"}
DEFAULTS = {"index_math": "per_tap", "tiles": "default", "prologue": "fused"}
# Tiles far smaller than the planes: several per plane, partial in both directions.
SMALL_TILES = {"index_math": "hoisted", "configs": [({"BLOCK_R": 4, "BLOCK_W": 8}, 1, 2)]}

PROBLEM = '''
import torch
import torch.nn as nn
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv{d}d({c}, {cout}, {k}, stride={s}, padding={p}, groups={c}, bias={bias})
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn({c}, {ones}))
    def forward(self, x):
        {pre}
        return torch.relu(self.conv(x) - 0.1)
def get_inputs():
    return [torch.randn({shape}) * 2]
def get_init_inputs():
    return []
'''
PRE = "x = torch.clamp(x * self.scale + 0.5, 0.0, 6.0)"  # re-applied on every tap when fused


def _case(d: int, c: int, cout: int, k: int, s: object, p: int, bias: bool, shape: str, pre: str = "") -> str:
    return PROBLEM.format(d=d, c=c, cout=cout, k=k, s=s, p=p, bias=bias, ones=", ".join(["1"] * d),
                          shape=shape, pre=pre)


CASES = {
    "2d-s1": _case(2, 4, 4, 3, 1, 1, False, "2, 4, 9, 11"),
    "2d-s2-bias-prologue-x2": _case(2, 4, 8, 3, 2, 1, True, "1, 4, 9, 11", PRE),
    "1d-s2-bias-prologue": _case(1, 3, 3, 5, 2, 2, True, "2, 3, 19", PRE),
    "3d": _case(3, 2, 2, 3, (1, 2, 1), 1, False, "1, 2, 4, 5, 6"),
    # Read through a view's strides, no unit-stride row: the kw taps' offsets scale by sxw.
    "2d-view-bias": _case(2, 3, 3, 3, (2, 1), 1, True, "2, 3, 11, 8", "x = x.transpose(-1, -2)"),
}
PROLOGUE_CASES = [name for name in CASES if "prologue" in name]


def _dw_kernel(source: str) -> str:
    return re.search(r"^def (_dwconv_kernel_\d+)\(", source, re.M).group(1)


def test_skill_declares_the_variants_and_the_compute_limiter() -> None:
    skill = load_skills()[SKILL]
    assert 2 <= len(VARIANTS) <= 4 and VARIANTS[0] == {"index_math": "hoisted", "tiles": "rows_per_thread"}
    assert MATERIALIZE in VARIANTS
    assert by_limiter([types.SimpleNamespace(skill=skill)], "compute-bound")[0].skill is skill


def test_mobilenet_kernel_variants_change_its_depthwise_kernel_and_the_default_does_not() -> None:
    task = task_with_best(MOBILENET)
    default = generate(MOBILENET, SKILL).source
    assert generate(MOBILENET, SKILL, DEFAULTS).source == default
    assert generate(MOBILENET, SKILL, {"unread": 1}).source == default  # not this template's key
    dw = _dw_kernel(task.best.source)
    sources = [generate(MOBILENET, SKILL, v).source for v in KERNEL_VARIANTS]
    for i, a in enumerate(sources):
        assert not same_code(a, default), KERNEL_VARIANTS[i]
        assert all(not same_code(a, b) for b in sources[i + 1:]), KERNEL_VARIANTS[i]
    assert not author().can_apply(SKILL, task) and not author().can_apply(SKILL, task, DEFAULTS)
    assert all(author().can_apply(SKILL, task, v) and author().touches(SKILL, task, v, dw) is True
               for v in KERNEL_VARIANTS)
    # Its depthwise convolution has no prologue (a training-mode batch norm's apply writes it).
    assert not author().can_apply(SKILL, task, MATERIALIZE)


def test_a_variant_that_rebuilds_code_the_task_already_judged_is_no_move() -> None:
    """Once a variant is the best, `prologue: materialize` on level3/05 emits the first candidate's
    code again: judged in round 0, it would spend a round on nothing (H100, 2026-12-07)."""
    task = task_with_best(MOBILENET)
    first = task.best
    task.best = author().apply(task, Plan(skill_id=SKILL, params=KERNEL_VARIANTS[0]))
    assert author().can_apply(SKILL, task, MATERIALIZE)  # differs from the best...
    judged = Attempt(round=0, node="generator", params={}, source_hash=source_hash(first.source),
                     outcome="correct")
    task = AuthorTask(problem=task.problem, device="cpu", best=task.best, attempts=[judged])
    assert not author().can_apply(SKILL, task, MATERIALIZE)  # ...but is round 0's code
    assert all(author().can_apply(SKILL, task, v) for v in KERNEL_VARIANTS[1:])


@pytest.mark.parametrize("case", PROLOGUE_CASES)
def test_materialize_moves_the_prologue_to_its_own_kernel(case: str) -> None:
    task = task_with_best(CASES[case])
    fused = task.best.source
    dw = _dw_kernel(fused)
    assert "p_in0" in fused and "_pointwise_kernel" not in fused
    cand = generate(CASES[case], SKILL, MATERIALIZE)
    assert SKILL in cand.author_state.templates
    assert "p_in0" not in cand.source and re.search(r"^def _pointwise_kernel_\d+\(", cand.source, re.M)
    assert author().can_apply(SKILL, task, MATERIALIZE) and author().touches(SKILL, task, MATERIALIZE, dw)


@pytest.mark.parametrize("params", [{"index_math": "unrolled"}, {"tiles": 128}, {"prologue": "never"}])
def test_bad_values_cost_the_region_not_the_candidate(params: dict) -> None:
    cand = generate(CASES["2d-s2-bias-prologue-x2"], SKILL, params)
    assert SKILL not in cand.author_state.templates and "_dwconv_kernel" not in cand.source, params


def _same_as_eager(source: str, params: dict, i64: bool = False) -> str:
    """The candidate's output against eager's on one input; returns its source."""
    cand = generate(source, SKILL, params)
    assert SKILL in cand.author_state.templates, params
    def wide(mod: types.ModuleType) -> None:  # every launcher of the file plans 64-bit offsets
        mod._i64 = lambda *tensors, n=0: True

    against_eager(source, cand.source, "dw_variant", wide if i64 else None)
    return cand.source


def _id(v: dict) -> str:
    return "small_tiles" if "configs" in v else "-".join(f"{k}_{v[k]}" for k in sorted(v))


@pytest.mark.parametrize("variant", [*VARIANTS, SMALL_TILES], ids=_id)
@pytest.mark.parametrize("case", sorted(CASES))
def test_variant_matches_eager(case: str, variant: dict) -> None:
    if variant == MATERIALIZE and case not in PROLOGUE_CASES:
        assert generate(CASES[case], SKILL, variant).source == generate(CASES[case]).source
        return
    source = _same_as_eager(CASES[case], variant)
    if variant.get("index_math") == "hoisted":
        # Only the 3-D kernel divides its rows by OH; the others take a row as oh.
        assert ("od = r // OH" in source) == case.startswith("3d")


@pytest.mark.parametrize("variant", KERNEL_VARIANTS, ids=_id)
def test_variant_matches_eager_with_int64_offsets(variant: dict) -> None:
    _same_as_eager(CASES["2d-s2-bias-prologue-x2"], variant, i64=True)


# In a fresh process (the interpreter's jit functions cannot compile): the autotuned depthwise
# kernels of the files given (every config where the flag says so: `_configs` keeps the first
# alone without a GPU, so the module is loaded as if one were there), for sm_90 with Triton's
# ptxas (no GPU needed), on the argument types of a real launch; the first config again with
# 64-bit offsets.
COMPILE = """
import importlib.util, json, sys
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.runtime.autotuner import Autotuner
from kernelskill.eval.problem import load_problem


class Recorder:
    def __init__(self, tuner, calls):
        self.tuner, self.calls, self.fn = tuner, calls, tuner.fn

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((self.tuner, args, kwargs))


def ty(v):
    if isinstance(v, torch.Tensor):
        return "*fp32"
    return "i1" if isinstance(v, bool) else "i32" if isinstance(v, int) else "fp32"


done = []
for i, (problem, cand, every) in enumerate(json.loads(sys.argv[1])):
    spec = importlib.util.spec_from_file_location(f"cand{i}", cand)
    module = importlib.util.module_from_spec(spec)
    available, torch.cuda.is_available = torch.cuda.is_available, lambda: every
    spec.loader.exec_module(module)
    torch.cuda.is_available = available
    calls = []
    for name, obj in list(vars(module).items()):
        if isinstance(obj, Autotuner) and name.startswith("_dwconv_kernel"):
            setattr(module, name, Recorder(obj, calls))
    prob = load_problem(open(problem).read(), "small", problem)
    with torch.no_grad():
        module.ModelNew()(*prob.get_inputs())
    for tuner, args, kwargs in calls:
        fn = tuner.fn
        sig = {n: "constexpr" if fn.params[j].is_constexpr else ty(args[j])
               for j, n in enumerate(fn.arg_names)}
        runs = [(cfg, kwargs) for cfg in tuner.configs] + [(tuner.configs[0], {**kwargs, "I64": True})]
        for cfg, kw in runs:
            consts = {n: v for n, v in {**kw, **cfg.kwargs}.items() if n in sig}
            triton.compile(triton.compiler.ASTSource(fn, sig, consts), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
            done.append(fn.__name__)
print(json.dumps(done))
"""


def test_hoisted_kernels_compile_for_sm90(tmp_path: Path) -> None:
    import triton

    if "nvidia" not in triton.backends.backends:
        pytest.skip("Triton's NVIDIA backend is not installed")
    runs = []
    for case, variant, every in (("2d-s1", VARIANTS[0], True),
                                 ("2d-s2-bias-prologue-x2", {"index_math": "hoisted"}, False)):
        (tmp_path / f"{case}.py").write_text(CASES[case])
        (tmp_path / f"{case}_cand.py").write_text(generate(CASES[case], SKILL, variant).source)
        runs.append((str(tmp_path / f"{case}.py"), str(tmp_path / f"{case}_cand.py"), every))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", COMPILE, json.dumps(runs)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    compiled = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(compiled) == (6 + 1) + (1 + 1), compiled  # ROW_CONFIGS' six; CONFIGS' first; each + int64
