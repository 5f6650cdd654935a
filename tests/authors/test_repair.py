"""The built-in author's repair: a wrong kernel is found by halving the suspects, innocent
regions keep their kernels, and the last allowed repair always ends correct."""

from __future__ import annotations

from pathlib import Path

from author_util import author, evaluate, problem
from kernelskill.authors.base import AuthorTask, same_code
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.authors.builtin.emit import dedupe, rename
from kernelskill.authors.builtin.families.pointwise.template import FusedElementwise
from kernelskill.authors.builtin.frontend.ir import Region
from kernelskill.authors.builtin.templates.base import EmitContext, Emitted
from kernelskill.authors.builtin.templates.loader import load_templates

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"

# Six independent elementwise chains (split by reductions), one of them containing a sigmoid.
SRC = '''
import torch
import torch.nn as nn
N = 37
SMALL = {}
class Model(nn.Module):
    def forward(self, x):
        a = torch.relu(x) * 2.0
        b = torch.tanh(a.sum(dim=1, keepdim=True) + x)
        c = (b - 0.5).abs()
        d = torch.sigmoid(c.mean(dim=0, keepdim=True) * x)
        e = torch.exp(-d.amax(dim=1, keepdim=True) * x)
        f = e * 3.0 + 1.0
        return f.sum(dim=1) + a.sum(dim=1), d  # d is also an output: its chain is its own region
def get_inputs():
    return [torch.randn(N, 29)]
def get_init_inputs():
    return []
'''


class Sabotaged(FusedElementwise):
    """Emits a wrong kernel (an extra + 1) for chains containing a sigmoid."""

    def emit(self, region: Region, ctx: EmitContext) -> Emitted:
        em = super().emit(region, ctx)
        if any(op.kind == "sigmoid" for op in region.ops):
            em.kernels = [k.replace("tl.sigmoid(", "1.0 + tl.sigmoid(") for k in em.kernels]
        return em


def test_bisection_finds_the_wrong_region_within_the_budget() -> None:
    templates = dict(load_templates())
    templates["fuse-elementwise-chain"] = Sabotaged()
    author = BuiltinAuthor(templates)
    task = AuthorTask(problem=problem(SRC), device="cpu")
    cand = author.generate(task)
    suspects = len(cand.author_state.templated)
    assert suspects >= 5
    result = evaluate(SRC, cand.source)
    assert not result.correct  # the sabotage is real
    budget = 3
    for used in range(budget):
        task.current, task.error = cand, result.reason
        task.repairs_left = budget - used
        cand = author.repair(task)
        result = evaluate(SRC, cand.source)
        if result.correct:
            break
    assert result.correct, result.reason
    # Only the guilty region (and at most the half it was found in) went back to PyTorch.
    assert result.custom_kernels >= 2
    assert "1.0 + tl.sigmoid(" not in cand.source


def test_last_repair_falls_back_every_suspect() -> None:
    templates = dict(load_templates())
    templates["fuse-elementwise-chain"] = Sabotaged()
    author = BuiltinAuthor(templates)
    task = AuthorTask(problem=problem(SRC), device="cpu")
    cand = author.generate(task)
    task.current, task.error, task.repairs_left = cand, "wrong output", 1
    fixed = author.repair(task)
    assert set(fixed.author_state.trial) == set(fixed.author_state.suspects)
    assert evaluate(SRC, fixed.source).correct


def test_can_apply_is_false_for_a_skill_that_changes_nothing_in_the_best_candidate() -> None:
    """The planner asks before spending a round: on an H200 bench, every activation problem's only
    round went to a loss-reduction skill that had nothing to match."""
    for path, noop, useful in [("level1/11_gelu", "elementwise-loss-grid-reduction", None),
                               ("level1/22_softmax_last_dim", "elementwise-loss-grid-reduction",
                                "multi-row-blocks")]:
        task = AuthorTask(problem=problem((PROBLEMS / f"{path}.py").read_text()), device="cpu")
        assert author().can_apply(noop) and author().can_apply(noop, task)  # no best yet: unknown
        task.best = author().generate(task)
        assert not author().can_apply(noop, task), path
        assert not author().can_apply("no-such-skill", task)
        if useful:
            assert author().can_apply(useful, task), path


def test_same_code_ignores_the_docstring_naming_the_templates_but_not_code() -> None:
    a = '"""Templates: a."""\nimport torch\nx = 1\n'
    assert same_code(a, '"""Templates: b."""\nimport torch\nx  =  1\n')
    assert not same_code(a, '"""Templates: a."""\nimport torch\nx = 2\n')
    assert not same_code("def f(:", "def f(: ")  # unparsable: compared as text


def test_a_skill_that_only_renames_the_template_in_the_docstring_is_a_no_op() -> None:
    task = AuthorTask(problem=problem((PROBLEMS / "level1/01_matmul_square.py").read_text(), size="full"),
                      device="cuda")
    task.best = author().generate(task)
    # Both only relabel the same GEMM kernel for a square fp32 matmul; tile shapes change code.
    assert not author().can_apply("gemv-bandwidth-kernel", task)
    assert not author().can_apply("gemm-tf32x3-strict-fp32", task)
    assert author().can_apply("gemm-tile-shapes", task)


def test_rename_replaces_whole_identifiers_only_and_scales_to_thousands_of_aliases() -> None:
    """An unrolled 200-step loop emits thousands of identical kernels and launchers: renaming is a
    dict lookup per word (an alternation of every alias, recompiled as it grew, took minutes)."""
    text = "_k_1(x_k_1, _k_12) + self._k_1 + _k_10"
    assert rename(text, {"_k_1": "_k_0", "_k_10": "_k_9"}) == "_k_0(x_k_1, _k_12) + self._k_0 + _k_9"
    n = 4000
    defs = [f"@triton.jit\ndef _k_{i}(x):\n    return x * 2 + _k_{i}\n" for i in range(n)]
    kernels, aliases = dedupe(defs, {})  # seconds now; the quadratic form took minutes here
    assert len(kernels) == 1 and len(aliases) == n - 1 and aliases["_k_3999"] == "_k_0"


def test_identical_kernels_of_repeated_blocks_are_emitted_once_and_repaired_together() -> None:
    k = "@triton.jit\ndef {n}(x):\n    return x + 1\n"
    launcher = "def {l}(x):\n    return {n}[(1,)](x)\n"
    other = k.format(n="_k_3").replace("+ 1", "+ 2")
    kernels, aliases = dedupe([k.format(n="_k_1"), k.format(n="_k_2"), other], {})
    assert [s.split("def ")[1][:4] for s in kernels] == ["_k_1", "_k_3"] and aliases == {"_k_2": "_k_1"}
    helpers, aliases = dedupe([launcher.format(l="_run_1", n="_k_1"), launcher.format(l="_run_2", n="_k_2")],
                              aliases)
    assert len(helpers) == 1 and aliases == {"_k_2": "_k_1", "_run_2": "_run_1"}

    # Three identical pointwise layers: one kernel; an error naming it falls back all three.
    # The row sum is scaled: unscaled, three layers cancel so badly that a different summation
    # order alone differed from float64 by 2e-4 (34x PyTorch's own error) on the judge's
    # "few negatives" inputs, which failed CI once; scaled, the worst of 300 seeds is 1.5e-6.
    layer = "        x = torch.tanh(x * 1.5 + 0.25)\n        x = x.sum(dim=1, keepdim=True) * 0.1 + x"
    layers = "\n".join(layer for _ in range(3))
    src = f'''
import torch
import torch.nn as nn

N = 37
SMALL = {{}}
class Model(nn.Module):
    def forward(self, x):
{layers}
        return x
def get_inputs():
    return [torch.randn(N, 29)]
def get_init_inputs():
    return []
'''
    task = AuthorTask(problem=problem(src), device="cpu")
    cand = author().generate(task)
    state = cand.author_state
    kept = {state.kernel_aliases.get(n, n) for n in state.kernels}
    assert len(kept) < len(state.kernels) and all(n in cand.source for n in kept)
    assert not any(f"def {n}(" in cand.source for n in state.kernel_aliases)
    assert evaluate(src, cand.source).correct
    shared = next(n for n in kept if list(state.kernel_aliases.values()).count(n) >= 2)
    task.current, task.error = cand, f"[correctness] wrong values in {shared}"
    fixed = author().repair(task)
    users = [key for n, key in state.kernels.items() if state.kernel_aliases.get(n, n) == shared]
    assert len(users) >= 3 and set(users) <= set(fixed.author_state.config.fallback_regions)
