"""Launch-plan caches of the window-pooling and global-pooling launchers: a plan (output geometry,
strides, constexprs, grid) is computed once per operand signature and set of pooling arguments,
on meta tensors, and reused with the autotuner's pick. Calls alternating shapes, layouts (channels
last, sliced, transposed) and pooling arguments each get their own plan and match PyTorch."""

from __future__ import annotations

import ast
import inspect
import re
import types

import torch
import torch.nn.functional as F
from author_util import count_autotuner_runs, generate, templates_used
from kernelskill.eval.problem import exec_module
from kernelskill.eval.static.checks import run_static_checks

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
"""

MAXPOOL2D = HEAD + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
    def forward(self, x):
        return self.pool(x)

def get_inputs():
    return [torch.randn(2, 3, 11, 9)]

def get_init_inputs():
    return []
"""

AVGPOOL2D = MAXPOOL2D.replace("nn.MaxPool2d(3, stride=2, padding=1)", "nn.AvgPool2d(2)")

MAXPOOL1D = HEAD + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(5, stride=2, padding=2)
    def forward(self, x):
        return self.pool(x)

def get_inputs():
    return [torch.randn(2, 3, 40)]

def get_init_inputs():
    return []
"""

# A prologue and an epilogue with per-channel operands: plans hold their strides too.
FUSED3D = HEAD + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(3, 1, 1, 1))
        self.shift = nn.Parameter(torch.randn(3, 1, 1, 1))
    def forward(self, x):
        y = F.avg_pool3d(F.relu(x * self.scale), 2, ceil_mode=True, count_include_pad=False)
        return torch.sigmoid(y) * self.shift + 0.5

def get_inputs():
    return [torch.randn(2, 3, 5, 6, 7)]

def get_init_inputs():
    return []
"""

# List-valued attributes do not hash: the forward passes them as tuples.
LISTS = HEAD + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d([3, 2], stride=[2, 1], padding=[1, 0])
    def forward(self, x):
        return F.avg_pool2d(self.pool(x), [2, 2])

def get_inputs():
    return [torch.randn(2, 3, 11, 9)]

def get_init_inputs():
    return []
"""

GLOBAL = HEAD + """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.shift = nn.Parameter(torch.randn(3, 1, 1))
    def forward(self, x):
        return F.relu(self.gap(torch.tanh(x)) - self.shift)

def get_inputs():
    return [torch.randn(2, 3, 7, 5)]

def get_init_inputs():
    return []
"""


def _module(source: str, template: str) -> types.ModuleType:
    cand = generate(source)
    assert template in templates_used(cand), templates_used(cand)
    assert run_static_checks(cand.source) == []  # a shape-keyed plan is not output caching
    return exec_module(cand.source, "pool_plans_candidate.py", "pool_plans_candidate")


def _plans(mod: types.ModuleType, stem: str = "pool") -> list[dict]:
    """The plan caches of the `_{stem}_N` launchers (other launchers in the file have their own)."""
    names = {n for k, f in vars(mod).items() if re.fullmatch(rf"_{stem}_\d+", k)
             for n in f.__code__.co_names if n.startswith("_plans")}
    assert names
    return [getattr(mod, n) for n in sorted(names)]


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last)


def test_window_pool_plans_per_signature() -> None:
    mod = _module(MAXPOOL2D, "fused-pooling-window")
    runs = count_autotuner_runs(mod, r"_pool_kernel_\d+")
    model = mod.ModelNew()
    calls = [torch.randn(2, 3, 11, 9),
             torch.randn(1, 4, 8, 13),
             _channels_last(torch.randn(2, 3, 11, 9)),  # same shape, other strides
             torch.randn(2, 3, 11, 18)[..., ::2],  # a sliced view
             torch.randn(2, 3, 11, 9)]  # the first signature again
    for x in calls:
        torch.testing.assert_close(model(x), F.max_pool2d(x, 3, 2, 1))
    (plans,) = _plans(mod)
    assert len(plans) == 4  # the last call reused the first signature's plan
    assert all(plan[-1] for plan in plans.values())  # each kept its autotuning pick
    assert list(runs.values()) == [4]  # ... and the reused plan launched with it, past the autotuner


def test_one_dim_pool_batched_unbatched_and_sliced() -> None:
    mod = _module(MAXPOOL1D, "fused-pooling-window")
    model = mod.ModelNew()
    calls = [torch.randn(2, 3, 40), torch.randn(3, 40), torch.randn(2, 3, 80)[..., 1::2],
             torch.randn(3, 2, 40).transpose(0, 1), torch.randn(3, 40)]
    for x in calls:
        torch.testing.assert_close(model(x), F.max_pool1d(x, 5, 2, 2))
    (plans,) = _plans(mod)
    assert len(plans) == 4


def test_pooling_arguments_key_the_plan() -> None:
    """The layer's attributes are read at run time: changing them on the same input gives a new
    plan per setting (they are constexprs and output sizes), and the first setting reuses its own."""
    mod = _module(AVGPOOL2D, "fused-pooling-window")
    runs = count_autotuner_runs(mod, r"_pool_kernel_\d+")
    model = mod.ModelNew()
    x = torch.randn(2, 3, 11, 9)
    settings = [dict(kernel_size=2, stride=2, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None),
                dict(kernel_size=3, stride=1, padding=1, ceil_mode=False, count_include_pad=True,
                     divisor_override=None),
                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False,
                     divisor_override=None),
                dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), ceil_mode=True,
                     count_include_pad=True, divisor_override=5),
                dict(kernel_size=2, stride=2, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None)]
    for attrs in settings:
        for name, value in attrs.items():
            setattr(model.pool, name, value)
        torch.testing.assert_close(model(x), F.avg_pool2d(x, **attrs))
    (plans,) = _plans(mod)
    assert len(plans) == 4
    assert list(runs.values()) == [4]


def test_fused_chain_plans_hold_operand_strides() -> None:
    mod = _module(FUSED3D, "fused-pooling-window")
    model = mod.ModelNew()
    ns: dict = {}
    exec(FUSED3D, ns)
    ref = ns["Model"]()
    ref.load_state_dict(model.state_dict())
    calls = [torch.randn(2, 3, 5, 6, 7), torch.randn(1, 3, 4, 4, 9),
             torch.randn(2, 3, 5, 7, 6).transpose(-1, -2),
             torch.randn(2, 3, 5, 6, 7).contiguous(memory_format=torch.channels_last_3d),
             torch.randn(2, 3, 5, 6, 7)]
    with torch.no_grad():
        for x in calls:
            torch.testing.assert_close(model(x), ref(x))
    (plans,) = _plans(mod)
    assert len(plans) == 4


def test_list_valued_attributes_are_passed_as_tuples() -> None:
    mod = _module(LISTS, "fused-pooling-window")
    model = mod.ModelNew()
    for x in [torch.randn(2, 3, 11, 9), _channels_last(torch.randn(2, 3, 11, 9)), torch.randn(2, 3, 11, 9)]:
        ref = F.avg_pool2d(F.max_pool2d(x, [3, 2], [2, 1], [1, 0]), [2, 2])
        torch.testing.assert_close(model(x), ref)
    # The first pool saw two layouts; the second always gets the first's contiguous output.
    assert sorted(len(p) for p in _plans(mod)) == [1, 2]
    src = generate(LISTS).source
    assert "tuple(self.pool.kernel_size)" in src and "(2, 2), None" in src


def test_global_pool_plans_per_signature() -> None:
    mod = _module(GLOBAL, "global-pool-as-row-reduction")
    runs = count_autotuner_runs(mod, r"_gpool_kernel_\d+")
    model = mod.ModelNew()
    ns: dict = {}
    exec(GLOBAL, ns)
    ref = ns["Model"]()
    ref.load_state_dict(model.state_dict())
    calls = [torch.randn(2, 3, 7, 5), torch.randn(4, 3, 2, 9),
             _channels_last(torch.randn(2, 3, 7, 5)),
             torch.randn(2, 3, 5, 7).transpose(-1, -2),  # spatial dims that do not collapse
             torch.randn(2, 3, 7, 5)]
    with torch.no_grad():
        for x in calls:
            torch.testing.assert_close(model(x), ref(x))
    (plans,) = _plans(mod, "gpool")
    assert len(plans) == 4
    assert all(plan[-1] for plan in plans.values())
    assert list(runs.values()) == [4]


def _launchers(mod: types.ModuleType, stem: str) -> list[ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(mod))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and re.fullmatch(rf"_{stem}_\d+", n.name)]


def test_plane_launchers_are_data_and_one_runtime_call() -> None:
    """A plane launcher's body is one _cp_run call naming its plan cache, kernel and planner; the
    host logic (plan, allocation, empty outputs, launch) lives in the runtime."""
    for source, template, stem, planner in [(FUSED3D, "fused-pooling-window", "pool", "_pool_plan"),
                                            (GLOBAL, "global-pool-as-row-reduction", "gpool", "_gpool_plan")]:
        mod = _module(source, template)
        (fn,) = _launchers(mod, stem)
        (ret,) = fn.body
        assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Call)
        assert ast.unparse(ret.value.func) == "_cp_run"
        plans, kernel, plan_fn = (ast.unparse(a) for a in ret.value.args[:3])
        assert plans.startswith("_plans") and plan_fn == planner
        assert re.fullmatch(rf"_{stem}_kernel_\d+", kernel)


def test_empty_outputs_and_empty_windows() -> None:
    """No launch where the plan says so: an empty batch gives an empty output of the right shape;
    a global mean over no elements is NaN, as torch.mean's."""
    mod = _module(MAXPOOL2D, "fused-pooling-window")
    x = torch.randn(0, 3, 11, 9)
    out = mod.ModelNew()(x)
    assert out.shape == F.max_pool2d(x, 3, 2, 1).shape == (0, 3, 6, 5)
    mod = _module(GLOBAL, "global-pool-as-row-reduction")
    (fn,) = _launchers(mod, "gpool")
    shift = torch.randn(3, 1, 1)
    out = getattr(mod, fn.name)(torch.randn(2, 3, 0, 5), shift)
    assert out.shape == (2, 3, 1, 1) and torch.isnan(out).all()
    assert getattr(mod, fn.name)(torch.randn(0, 3, 4, 5), shift).shape == (0, 3, 1, 1)
