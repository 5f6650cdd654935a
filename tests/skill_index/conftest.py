"""Shared fixtures: one real index over the repo's skills/, built once per test session.

Embedding the library takes a few seconds on a CPU, so every test that needs rankings shares
this index (its own tmp persist dir and stats file; tests that record outcomes use their own).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernelskill.skill_index import SkillIndex, default_skills_dir


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("skill_index")


@pytest.fixture(scope="session")
def index(index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> SkillIndex:
    idx = SkillIndex(default_skills_dir(), index_dir, tmp_path_factory.mktemp("stats") / "stats.json")
    idx.sync()
    return idx


@pytest.fixture
def skill_copy(tmp_path: Path):
    """Copy some repo skills into a fresh skills/ folder; returns (folder, copy function)."""
    root = tmp_path / "skills"
    root.mkdir()

    def copy(*ids: str) -> Path:
        for sid in ids:
            shutil.copytree(default_skills_dir() / sid, root / sid)
        return root

    return copy
