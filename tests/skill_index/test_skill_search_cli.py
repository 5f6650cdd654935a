"""`kernelskill skills search` as a user types it: a repeated query answers from the query-vector
cache, a new one from the numpy forward of the model (no torch), and an edited SKILL.md is
re-embedded by sentence-transformers before any answer.

"Not imported" is observed, not timed: the later calls run with `sentence_transformers`,
`transformers` and `torch` packages on PYTHONPATH that refuse to import, so any call that needs
them exits 2.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.skill_index.query_cache import CACHE_FILE

MAIN = "import sys; from kernelskill.cli.main import main; sys.exit(main())"
IDS = ("online-softmax", "single-pass-block-scan", "cuda-graph-replay", "fused-pooling-window")
QUERY = "memory-bound row-reduction softmax"


@pytest.fixture
def no_model(tmp_path: Path) -> Path:
    """A folder whose `sentence_transformers`, `transformers` and `torch` raise ImportError, to put
    first on PYTHONPATH."""
    root = tmp_path / "no_model"
    for name in ("sentence_transformers", "transformers", "torch"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(
            f"raise ImportError('blocked by the test: this call must not import it', name={name!r})\n")
    return root


def search(tmp_path: Path, skills: Path, *text: str, block: Path | None = None
           ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    if block is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(block), env.get("PYTHONPATH")) if p)
    argv = ["skills", "search", *text, "-k", "10", "--json", "--skills-dir", str(skills),
            "--index-dir", str(tmp_path / "index"), "--stats-path", str(tmp_path / "stats.json")]
    return subprocess.run([sys.executable, "-c", MAIN, *argv], capture_output=True, text=True,
                          timeout=300, env=env)


def similarity(res: subprocess.CompletedProcess[str], skill_id: str) -> float:
    return next(row["similarity"] for row in json.loads(res.stdout) if row["id"] == skill_id)


def test_repeated_and_new_searches_answer_without_torch(skill_copy, tmp_path, no_model):
    skills = skill_copy(*IDS)
    first = search(tmp_path, skills, QUERY)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)[0]["id"] == "online-softmax"

    with sqlite3.connect(tmp_path / "index" / CACHE_FILE) as conn:
        rows = conn.execute("SELECT model, text FROM vectors").fetchall()
    assert rows == [("all-MiniLM-L6-v2", QUERY)]  # the query (not the skills) under its model name

    again = search(tmp_path, skills, QUERY, block=no_model)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)  # the same vector: the same answer

    other = search(tmp_path, skills, "a prefix sum scan over a long sequence", block=no_model)
    assert other.returncode == 0, other.stderr  # not cached: embedded in numpy
    assert json.loads(other.stdout)[0]["id"] == "single-pass-block-scan"
    with sqlite3.connect(tmp_path / "index" / CACHE_FILE) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vectors").fetchone() == (2,)


def test_an_edited_skill_is_reembedded_before_search_answers(skill_copy, tmp_path, no_model):
    skills = skill_copy(*IDS)
    query = "bilinear image resize interpolates four neighbouring pixels"
    before = search(tmp_path, skills, query)
    assert before.returncode == 0, before.stderr

    skill_md = skills / "single-pass-block-scan" / "SKILL.md"
    triggers = ("triggers: >-\n  A bilinear image resize interpolates four neighbouring pixels for every\n"
                "  output pixel. Each input pixel is read four times.\n")
    edited = re.sub(r"triggers: >-\n(?:  .*\n)+", triggers, skill_md.read_text(), count=1)
    assert "bilinear" in edited
    skill_md.write_text(edited)

    stale = search(tmp_path, skills, query, block=no_model)  # the query vector is cached, the skill is not
    assert stale.returncode == 2 and "cannot embed skills" in stale.stderr, stale

    after = search(tmp_path, skills, query)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)[0]["id"] == "single-pass-block-scan"
    assert similarity(after, "single-pass-block-scan") > similarity(before, "single-pass-block-scan") + 0.3
