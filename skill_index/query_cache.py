"""An on-disk cache of query embeddings keyed by (model name, text): a repeated query skips the model.

Rationale: on the 2-core dev machine, importing sentence-transformers (torch, transformers,
scikit-learn, scipy) took 11-20 s wall (~9 s CPU) and encoding a query 0.2 s; the rest of a search
(Python, pydantic, chromadb's import, the collection read, ranking) takes ~1.9 s CPU. A repeated
`kernelskill skills search` went from 19-29 s to 2.2-3.2 s wall (2026-12-01, load 3-5). The vectors
are the model's own float32 outputs stored byte for byte, so a hit returns exactly what the model
would (same neighbours, same scores).

SQLite (stdlib) rather than a JSON file: concurrent planners in a bench run may write at once,
and a keyed lookup does not read the whole table. The table is bounded (oldest rows dropped).
A cache that cannot be opened or written (read-only home, a locked file) is skipped: the query
is then embedded by the model, never refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import sys
from array import array
from collections.abc import Iterator
from pathlib import Path

from .embedding import Embedder

CACHE_FILE = "query_vectors.sqlite3"
MAX_ENTRIES = 4096  # ~1.6 KB a row: a few MB at most
_SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
           "text TEXT NOT NULL, vector BLOB NOT NULL)")


def cache_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\n{text}".encode()).hexdigest()


class CachedEmbedder:
    """Wraps an embedder: texts seen before (for the same model name) come from `path`, the rest
    from the wrapped embedder, which is then never called (nor its model loaded) on a full hit."""

    def __init__(self, inner: Embedder, path: Path, max_entries: int = MAX_ENTRIES) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = path
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._warned = False

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed on success, rolled back on error, the file closed either way."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(self.path, timeout=5)) as conn, conn:
            conn.execute(_SCHEMA)
            yield conn

    def _skip(self, exc: sqlite3.Error) -> None:
        if not self._warned:  # once per process: a broken cache costs speed, not answers
            print(f"kernelskill: query-vector cache {self.path} unusable ({exc}); embedding without it",
                  file=sys.stderr)
            self._warned = True

    def _lookup(self, keys: list[str]) -> dict[str, list[float]]:
        if not self.path.exists():
            return {}
        try:
            with self._connect() as conn:
                marks = ",".join("?" * len(keys))
                rows = conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", keys
                                    ).fetchall()
        except sqlite3.Error as exc:
            self._skip(exc)
            return {}
        found = {}
        for key, blob in rows:
            vector = array("f")
            vector.frombytes(blob)
            found[key] = vector.tolist()
        return found

    def _store(self, rows: list[tuple[str, str, list[float]]]) -> None:
        try:
            with self._connect() as conn:
                blobs = [(k, self.name, t, array("f", v).tobytes()) for k, t, v in rows]
                conn.executemany("INSERT OR REPLACE INTO vectors (key, model, text, vector) "
                                 "VALUES (?, ?, ?, ?)", blobs)
                conn.execute("DELETE FROM vectors WHERE rowid <= (SELECT MAX(rowid) FROM vectors) - ?",
                             (self.max_entries,))
        except sqlite3.Error as exc:
            self._skip(exc)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        keys = [cache_key(self.name, t) for t in texts]
        found = self._lookup(keys)
        missing = sorted({t for t, k in zip(texts, keys, strict=True) if k not in found})
        self.hits += len(texts) - sum(1 for k in keys if k not in found)
        self.misses += len(missing)
        if missing:
            vectors = self.inner.embed(missing)
            new = [(cache_key(self.name, t), t, v) for t, v in zip(missing, vectors, strict=True)]
            self._store(new)
            found.update((k, v) for k, _, v in new)
        return [found[k] for k in keys]
