"""The query-vector cache: exact vectors back, keyed by model name, bounded, and never in the way."""

from __future__ import annotations

import sqlite3

from kernelskill.skill_index.query_cache import CachedEmbedder


class FakeEmbedder:
    """Deterministic float32-representable vectors; records every text it was asked for."""

    def __init__(self, name: str = "fake-model") -> None:
        self.name = name
        self.calls: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += texts
        return [[len(t) / 8, -0.25, float(sum(map(ord, t)) % 97) / 4] for t in texts]


def test_second_lookup_is_a_hit_with_identical_vectors(tmp_path):
    inner = FakeEmbedder()
    want = inner.embed(["softmax rows", "a scan"])
    inner.calls.clear()
    first = CachedEmbedder(inner, tmp_path / "q.sqlite3").embed(["softmax rows", "a scan", "softmax rows"])
    assert first == [want[0], want[1], want[0]] and sorted(inner.calls) == ["a scan", "softmax rows"]

    fresh = CachedEmbedder(inner, tmp_path / "q.sqlite3")  # a new process, the same file
    assert fresh.embed(["a scan", "softmax rows"]) == [want[1], want[0]]
    assert fresh.hits == 2 and fresh.misses == 0 and len(inner.calls) == 2


def test_another_model_name_does_not_share_vectors(tmp_path):
    path = tmp_path / "q.sqlite3"
    CachedEmbedder(FakeEmbedder("model-a"), path).embed(["softmax rows"])
    other = FakeEmbedder("model-b")
    CachedEmbedder(other, path).embed(["softmax rows"])
    assert other.calls == ["softmax rows"]


def test_the_table_keeps_only_the_newest_entries(tmp_path):
    path = tmp_path / "q.sqlite3"
    cache = CachedEmbedder(FakeEmbedder(), path, max_entries=3)
    for i in range(5):
        cache.embed([f"query {i}"])
    with sqlite3.connect(path) as conn:
        texts = sorted(t for (t,) in conn.execute("SELECT text FROM vectors"))
    assert texts == ["query 2", "query 3", "query 4"]


def test_an_unusable_cache_warns_once_and_still_embeds(tmp_path, capsys):
    path = tmp_path / "q.sqlite3"
    path.mkdir()  # a folder where the database file should be: sqlite cannot open it
    inner = FakeEmbedder()
    cache = CachedEmbedder(inner, path)
    assert cache.embed(["a"]) == inner.embed(["a"])
    assert cache.embed(["b"]) == inner.embed(["b"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unusable" in err[0] and path.is_dir()
