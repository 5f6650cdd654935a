"""two-level-norm-statistics' variants: `stats_tile` / `stats_programs` reach the generated
launcher (runtime _nrm_stats_plan's `tile` / `programs`) for batch (training), group and instance
norms; the default, or parameters equal to it, emits the default's source; each variant is a move
(`can_apply`) and stays correct under the interpreter; a smaller tile gives smaller blocks that
still cover every element exactly once."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch
from author_util import against_eager, author, evaluate, generate, task_with_best
from kernelskill.authors.base import same_code
from kernelskill.authors.builtin.runtime import norm_batch, norm_groups, norms
from kernelskill.nodes.moves import by_limiter
from kernelskill.skill_index import load_skills

SKILL = "two-level-norm-statistics"
ROOT = Path(__file__).resolve().parents[2] / "problems"
VARIANTS = load_skills()[SKILL].all_variants()[1:]
DEFAULTS = {"stats_tile": 4096, "stats_programs": 1056}

PROBLEM = '''
import torch
import torch.nn as nn
SMALL = {{}}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = {module}
        nn.init.normal_(self.n.weight, 1.0, 0.2)
        nn.init.normal_(self.n.bias, 0.0, 0.2){eval}
    def forward(self, x):
        return torch.relu(self.n(x))
def get_inputs():
    return [torch.randn({shape}) * 3 + 5]
def get_init_inputs():
    return []
'''
# Training batch norm (always two-level), and a group norm whose groups (17266 elements) are too
# long for registers, so both run the statistics kernel the variants reshape.
BN = PROBLEM.format(module="nn.BatchNorm2d(5)", eval="", shape="3, 5, 11, 13")
GN = PROBLEM.format(module="nn.GroupNorm(2, 4)", eval="", shape="1, 4, 97, 89")
BN_EVAL = PROBLEM.format(module="nn.BatchNorm2d(5)", eval="\n        self.n.eval()", shape="3, 5, 11, 13")


def test_skill_declares_variants_and_the_occupancy_limiter() -> None:
    skill = load_skills()[SKILL]
    assert len(VARIANTS) >= 2 and VARIANTS[0] == {"stats_tile": 1024}  # register pressure first
    assert by_limiter([types.SimpleNamespace(skill=skill)], "occupancy-limited")[0].skill is skill


@pytest.mark.parametrize("name", ["level1/19_batchnorm2d", "level1/18_groupnorm", "level1/20_instancenorm2d",
                                  "level3/02_resnet_basic_block"])
def test_variants_change_the_source_and_the_default_does_not(name: str) -> None:
    src = (ROOT / f"{name}.py").read_text()
    task = task_with_best(src)
    default = generate(src, SKILL).source
    assert generate(src, SKILL, DEFAULTS).source == default
    assert "'tile'" not in default and "'programs'" not in default
    sources = [generate(src, SKILL, v).source for v in VARIANTS]
    for i, a in enumerate(sources):
        assert not same_code(a, default), VARIANTS[i]
        assert all(not same_code(a, b) for b in sources[i + 1:]), VARIANTS[i]
    assert SKILL in task.best.author_state.templates
    assert not author().can_apply(SKILL, task) and not author().can_apply(SKILL, task, DEFAULTS)
    assert all(author().can_apply(SKILL, task, v) for v in VARIANTS)


def test_eval_batch_norm_has_no_statistics_to_reshape() -> None:
    task = task_with_best(BN_EVAL)
    assert not any(author().can_apply(SKILL, task, v) for v in VARIANTS)


def test_bad_settings_cost_the_region_not_the_candidate() -> None:
    for params in ({"stats_tile": 1000}, {"stats_programs": 0}):
        cand = generate(BN, SKILL, params)
        assert SKILL not in cand.author_state.templates, params


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}{v[k]}" for k in sorted(v)))
@pytest.mark.parametrize("source", [BN, GN], ids=["batch_norm2d-training", "group_norm-two-level"])
def test_variant_is_correct(source: str, variant: dict) -> None:
    cand = generate(source, SKILL, variant)
    assert SKILL in cand.author_state.templates
    result = evaluate(source, cand.source)
    assert result.correct, result.reason
    assert "_nrm_stats_kernel" in result.kernel_names, result.kernel_names


def _stats_blocks(source: str, params: dict) -> int:
    """BLOCK_A * BLOCK_C * BLOCK_B of the statistics plan the candidate made on its first call,
    checked against eager (and the running statistics for a batch norm)."""
    cand = generate(source, SKILL, params)
    mod, new, ref = against_eager(source, cand.source, "norm_stats_variant")
    for name, buf in ref.n.named_buffers():
        torch.testing.assert_close(new.n.get_buffer(name), buf, rtol=1e-5, atol=1e-5)
    (plan,) = [p for k, v in vars(mod).items() if k.startswith("_plans") for p in v.values()]
    kw = plan[8][3]  # the plan's statistics plan (_nrm_stats_prep): its constexprs
    return kw["BLOCK_A"] * kw["BLOCK_C"] * kw["BLOCK_B"]


@pytest.mark.parametrize("source", [BN, GN], ids=["batch_norm2d-training", "group_norm-two-level"])
def test_the_tile_reaches_the_statistics_plan(source: str) -> None:
    default, small = _stats_blocks(source, {}), _stats_blocks(source, {"stats_tile": 1024})
    assert small <= 1024 < default <= 4096


def _meta(shape: tuple[int, ...], cl: bool) -> torch.Tensor:
    fmt = torch.channels_last if cl else torch.contiguous_format
    return torch.empty(shape, device="meta", memory_format=fmt)


BN_PLAN = lambda x, s: norm_batch._nrm_batch_plan(x, x.shape, False, {}, {}, 1e-5, True, 0.1, False, s)  # noqa: E731
GN_PLAN = lambda x, s: norm_groups._nrm_groups_plan(x, x.shape, False, {}, {}, 12, 1e-5, False, s)  # noqa: E731
IN_PLAN = lambda x, s: norm_groups._nrm_groups_plan(x, x.shape, False, {}, {}, None, 1e-5, False, s)  # noqa: E731


# Full-size suite shapes (level1/19, level1/18): large enough that the programs, not the 16K
# elements a program takes at least (min_work), set the chunk count.
@pytest.mark.parametrize("plan,shape,cl", [
    (BN_PLAN, (40, 120, 300, 360), False), (BN_PLAN, (40, 120, 300, 360), True),
    (GN_PLAN, (32, 96, 384, 448), False), (GN_PLAN, (32, 96, 384, 448), True),
    (IN_PLAN, (32, 96, 384, 448), True),
], ids=["batch-nchw", "batch-nhwc", "group-nchw", "group-nhwc", "instance-nhwc"])
def test_planners_hand_the_settings_to_the_statistics_plan(plan, shape: tuple[int, ...], cl: bool) -> None:  # noqa: ANN001
    """Every planner path of the two-level statistics takes the tile and the programs (on meta
    tensors: plans only)."""
    sizes = []
    for stats in (None, {"tile": 1024}, {"tile": 1024, "programs": 2112}):
        sp = plan(_meta(shape, cl), stats)[-1]
        kw = sp[3]
        sizes.append((kw["BLOCK_A"] * kw["BLOCK_C"] * kw["BLOCK_B"], sp[1][0] * sp[1][1]))
    (big, n0), (small, n1), (_, n2) = sizes
    assert small <= 1024 < big and n0 == n1 < n2


@pytest.mark.parametrize("tile", [64, 256, 1024, 2048, 4096])
@pytest.mark.parametrize("programs", [1, 7, 1056, 2112])
@pytest.mark.parametrize("A,C,B,gi,c_inner", [
    (5, 6, 143, 6, False),     # batch norm NCHW: channel c is A slabs of B
    (37, 24, 1, 24, False),    # BatchNorm1d: runs of one
    (143, 6, 5, 6, True),      # batch norm channels-last: channels contiguous
    (1, 8, 17266, 8, False),   # group norm: contiguous groups
    (99, 12, 3, 4, True),      # group norm channels-last: 3 images of 4 groups, 3 channels each
    (1, 12, 99, 4, False),     # instance norm channels-last, one channel a strided run
    (300, 3, 70, 3, False),
])
def test_stats_plan_fits_the_tile_and_covers_every_element(tile: int, programs: int, A: int, C: int, B: int,
                                                           gi: int, c_inner: bool) -> None:
    ba, bc, bb, a_per, b_per, a_ch, b_ch, n_cb = norms._nrm_stats_plan(A, C, B, gi, tile, programs,
                                                                       c_inner=c_inner)
    assert all(v & (v - 1) == 0 for v in (ba, bc, bb)) and ba * bc * bb <= tile
    assert a_per % ba == 0 and b_per % bb == 0
    # The kernel's indexing (families/norms/kernels.py _nrm_stats_kernel) on a coverage count.
    seen = torch.zeros(A, C, B, dtype=torch.int32)
    blocks = -(-gi // bc)
    for pc in range(n_cb):
        img, g0 = pc // blocks, (pc % blocks) * bc
        groups = [img * gi + g for g in range(g0, min(g0 + bc, gi))]
        for pk in range(a_ch * b_ch):
            a_lo, b_lo = (pk // b_ch) * a_per, (pk % b_ch) * b_per
            seen[a_lo:min(a_lo + a_per, A), groups, b_lo:min(b_lo + b_per, B)] += 1
    assert bool((seen == 1).all())
