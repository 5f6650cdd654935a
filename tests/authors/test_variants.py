"""A skill's declared variants are parameters the built-in author honours: each one changes the
generated source, and `can_apply` with a variant's parameters says whether it changes the best."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelskill.authors.base import AuthorTask, same_code
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.skill_index import load_skills
from kernelskill.state.records import Plan, Problem

ROOT = Path(__file__).resolve().parents[2]


def _task(name: str) -> AuthorTask:
    path = next(ROOT.glob(f"problems/level1/{name}.py"))
    return AuthorTask(problem=Problem(name=name, path=str(path), source=path.read_text(), size="small"),
                      device="cpu")


@pytest.mark.parametrize(("problem", "skill"), [("22_softmax_last_dim", "multi-row-blocks"),
                                                 ("29_cumsum", "single-pass-block-scan"),
                                                 ("11_gelu", "fuse-elementwise-chain")])
def test_every_declared_variant_changes_the_generated_code(problem: str, skill: str) -> None:
    author, task = BuiltinAuthor(), _task(problem)
    task.best = author.generate(task)
    variants = load_skills()[skill].all_variants()
    sources = [author.apply(task, Plan(skill_id=skill, params=v)).source for v in variants]
    for i, a in enumerate(sources):
        assert all(not same_code(a, b) for b in sources[i + 1:]), (skill, variants[i])
    in_best = skill in task.best.author_state.templates
    # A default template in the best: its default variant is a no-op, the others are moves.
    assert author.can_apply(skill, task) is not in_best
    assert all(author.can_apply(skill, task, v) for v in variants[1:])
