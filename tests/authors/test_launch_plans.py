"""Launch-plan caches of the elementwise, reduction and softmax launchers: a plan (broadcast shape,
collapsed strides, block sizes, constexprs) is computed once per operand signature on meta
tensors and reused; the autotuner's pick is kept with it. Calls alternating shapes and layouts,
including strided views and layouts that must be materialised, stay correct, and each signature
gets its own plan. Repeated identical regions keep one launcher, plan cache included."""

from __future__ import annotations

import types

import pytest
import torch
from author_util import generate
from kernelskill.eval.problem import exec_module
from kernelskill.eval.static.checks import run_static_checks

POINTWISE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, y):
        return torch.tanh(x) * y + 1.5

def get_inputs():
    return [torch.randn(6, 40), torch.randn(40)]

def get_init_inputs():
    return []
"""

REDUCTION = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x * x, dim=1)

def get_inputs():
    return [torch.randn(5, 33, 7)]

def get_init_inputs():
    return []
"""

SOFTMAX = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)

def get_inputs():
    return [torch.randn(9, 70)]

def get_init_inputs():
    return []
"""


def _module(source: str) -> types.ModuleType:
    cand = generate(source)
    assert run_static_checks(cand.source) == []  # a shape-keyed plan is not output caching
    return exec_module(cand.source, "plans_candidate.py", "plans_candidate")


def _plans(mod: types.ModuleType) -> dict:
    caches = [v for k, v in vars(mod).items() if k.startswith("_plans") and isinstance(v, dict)]
    assert len(caches) == 1
    return caches[0]


def test_elementwise_plans_per_signature() -> None:
    mod = _module(POINTWISE)
    model = mod.ModelNew()
    ref = lambda x, y: torch.tanh(x) * y + 1.5  # noqa: E731
    calls = [(torch.randn(6, 40), torch.randn(40)),
             (torch.randn(3, 5, 17), torch.randn(17)),
             (torch.randn(40, 6).t(), torch.randn(40)),  # strided view of the same shape
             (torch.randn(6, 40), torch.randn(6, 1)),
             (torch.randn(6, 40), torch.randn(40))]
    for x, y in calls:
        torch.testing.assert_close(model(x, y), ref(x, y))
    plans = _plans(mod)
    assert len(plans) == 4  # the last call reused the first signature's plan
    assert all(plan[-1] for plan in plans.values())  # each kept its autotuning pick


def test_elementwise_layout_materialised_per_call() -> None:
    """Operands the collapse cannot express (> 4 non-mergeable dims) are copied on every call,
    from the plan's flag, never from a cached tensor."""
    mod = _module(POINTWISE)
    model = mod.ModelNew()
    for seed in range(2):
        torch.manual_seed(seed)
        x = torch.randn(2, 3, 4, 5, 6, 2)[..., 0].permute(4, 3, 2, 1, 0)
        y = torch.randn(2)
        torch.testing.assert_close(model(x, y), torch.tanh(x) * y + 1.5)
    (plan,) = _plans(mod).values()
    assert plan[2]  # `mat`


@pytest.mark.parametrize("source", [REDUCTION, SOFTMAX], ids=["sum", "softmax"])
def test_reduction_plans_per_signature(source: str) -> None:
    mod = _module(source)
    model = mod.ModelNew()
    ns: dict = {}
    exec(source, ns)
    ref = ns["Model"]()
    shapes = [(5, 33, 7), (2, 100, 3), (5, 33, 7)] if source is REDUCTION else [(9, 70), (4, 3000), (9, 70)]
    for shape in shapes:
        x = torch.randn(*shape)
        torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-5)
    assert len(_plans(mod)) == 2


def test_reduction_layout_that_must_materialise_is_planned_per_call() -> None:
    """Reducing dims 0, 2 and 4 of a 5-D tensor fits no two-dim view, so the layout copies the
    operand: the cache then holds an empty marker and each call plans on its own copy."""
    src = (REDUCTION.replace("dim=1", "dim=(0, 2, 4)")
           .replace("torch.randn(5, 33, 7)", "torch.randn(3, 4, 5, 6, 2)"))
    mod = _module(src)
    model = mod.ModelNew()
    for seed in range(2):
        torch.manual_seed(seed)
        x = torch.randn(3, 4, 5, 6, 2)
        torch.testing.assert_close(model(x), torch.sum(x * x, dim=(0, 2, 4)), rtol=1e-5, atol=1e-5)
    assert list(_plans(mod).values()) == [()]


REPEATED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(24), nn.LayerNorm(24)
        self.p1, self.p2 = nn.MaxPool1d(3, 2, 1), nn.MaxPool1d(3, 2, 1)

    def forward(self, x):
        x = self.p1(torch.tanh(self.n1(x)))
        y = self.p2(torch.tanh(self.n2(x.repeat(1, 1, 2))))
        return torch.sum(x, dim=-1) + torch.sum(y * y, dim=-1)

def get_inputs():
    return [torch.randn(2, 3, 24)]

def get_init_inputs():
    return []
"""


def test_identical_regions_share_one_launcher_and_its_plans() -> None:
    """Repeated layers emit launchers identical but for their names, plan caches included: the file
    keeps one of each (emit.dedupe), so the layers share its plans and picks."""
    import re

    cand = generate(REPEATED)
    src = cand.source
    for stem in ("layer_norm", "pool"):
        assert len(re.findall(rf"^def _{stem}_\d+\(", src, re.M)) == 1, stem
    assert run_static_checks(src) == []
    mod = exec_module(src, "repeated_candidate.py", "repeated_candidate")
    ns: dict = {}
    exec(REPEATED, ns)
    torch.manual_seed(0)
    ref = ns["Model"]()
    model = mod.ModelNew()
    model.load_state_dict(ref.state_dict())
    x = torch.randn(2, 3, 24)
    torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-5)


def test_dedupe_aliases_every_name_a_definition_makes() -> None:
    from kernelskill.authors.builtin.emit import dedupe

    launcher = "{p} = {{}}\n\n\ndef {f}(x):\n    plan = {p}.get(x.shape)\n    return _k_1(x, plan)\n"
    other = launcher.replace("_k_1", "_k_2")
    defs = [launcher.format(p="_plans_1", f="_run_0"), launcher.format(p="_plans_4", f="_run_3"),
            other.format(p="_plans_6", f="_run_5")]
    helpers, aliases = dedupe(defs, {})
    assert len(helpers) == 2 and aliases == {"_plans_4": "_plans_1", "_run_3": "_run_0"}
