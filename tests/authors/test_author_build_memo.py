"""The built-in author builds an applied skill once per (best, skill, variant): the planner's dry
runs and the generator's build of the same variant share it, a round that leaves the best
unchanged finds the next round's dry runs built, and nobody sees another's changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernelskill.authors.base import AuthorError, AuthorTask
from kernelskill.authors.builtin.author import BuiltinAuthor
from kernelskill.state.records import Plan, Problem

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[BuiltinAuthor, list[str]]:
    author, notes = BuiltinAuthor(), []
    build = author._build

    def counting(task, cfg, note):  # noqa: ANN001, ANN202
        notes.append(note)
        return build(task, cfg, note)

    monkeypatch.setattr(author, "_build", counting)
    return author, notes


def _task(author: BuiltinAuthor) -> AuthorTask:
    path = ROOT / "problems/level1/11_gelu.py"
    task = AuthorTask(problem=Problem(name="11_gelu", path=str(path), source=path.read_text(), size="small"),
                      device="cpu")
    task.best = author.generate(task)
    return task


def test_a_dry_run_and_the_build_of_the_same_variant_share_one_build(counted) -> None:  # noqa: ANN001
    author, notes = counted
    task = _task(author)
    variant = {"configs": [[512, 4, 2], [1024, 4, 3]]}
    assert author.can_apply("fuse-elementwise-chain", task, variant)  # the planner's dry run
    assert notes == ["first candidate: default templates", "applied fuse-elementwise-chain"]
    cand = author.apply(task, Plan(skill_id="fuse-elementwise-chain", params=variant))
    assert len(notes) == 2  # the generator's build of the planned variant: no second build
    assert cand.skill_id == "fuse-elementwise-chain" and cand.params == variant
    cand.source, cand.params = "changed by its caller", {}
    again = author.apply(task, Plan(skill_id="fuse-elementwise-chain", params=variant))
    assert again.source != "changed by its caller" and again.params == variant and len(notes) == 2
    # Another variant, or the same one on a new best, is a new build.
    author.apply(task, Plan(skill_id="fuse-elementwise-chain", params={}))
    task.best = again
    author.apply(task, Plan(skill_id="fuse-elementwise-chain", params=variant))
    assert len(notes) == 4


def test_a_build_error_is_kept_too(counted, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    author, notes = counted
    task = _task(author)

    def failing(task, cfg, note):  # noqa: ANN001, ANN202
        notes.append(note)
        raise AuthorError("this template cannot build here")

    monkeypatch.setattr(author, "_build", failing)
    assert author.can_apply("fuse-elementwise-chain", task, {"block": 1}) is False
    with pytest.raises(AuthorError, match="cannot build here"):
        author.apply(task, Plan(skill_id="fuse-elementwise-chain", params={"block": 1}))
    assert notes[1:] == ["applied fuse-elementwise-chain"]
