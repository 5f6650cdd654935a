"""The persistent Chroma collection of skill trigger embeddings, kept in sync incrementally.

Each record carries a content hash of (embedder name, trigger text) in its metadata: a sync
re-embeds only skills whose hash changed, adds new ones and deletes ids no longer in skills/.
chromadb is imported on first use; telemetry is off and no embedding function is attached
(we always pass vectors), so Chroma never reaches for the network.

Ranking reads the stored vectors back and scores *all* of them exactly (one 384-d dot product per
skill). Rationale: the library is tens to hundreds of skills, where exact search costs microseconds,
and Chroma's HNSW search is approximate — measured here, a query right after an upsert in the same
process dropped an unchanged record from an n_results=count query, which silently hid a skill.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .embedding import Embedder
from .schema import Skill

if TYPE_CHECKING:
    import numpy as np

COLLECTION = "skills"


@dataclass(frozen=True)
class SyncReport:
    """What one sync did: ids added, re-embedded (text changed), removed, and texts embedded."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def embedded(self) -> int:
        return len(self.added) + len(self.updated)


@functools.lru_cache(maxsize=8)
def _client(path: str):  # one client per folder per process: Chroma refuses two with one path
    import chromadb
    from chromadb.config import Settings

    Path(path).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))


def content_hash(embedder_name: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_name}\n{text}".encode()).hexdigest()[:16]


class SkillStore:
    """A thin wrapper around one Chroma collection keyed by skill id (cosine space)."""

    def __init__(self, persist_dir: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self._collection = _client(str(persist_dir.resolve())).get_or_create_collection(
            COLLECTION, metadata={"hnsw:space": "cosine"}, embedding_function=None)
        self._vectors: tuple[list[str], np.ndarray] | None = None

    def sync(self, skills: dict[str, Skill]) -> SyncReport:
        stored = self._collection.get(include=["metadatas"])
        old = {i: (m or {}).get("hash") for i, m in zip(stored["ids"], stored["metadatas"], strict=True)}
        want = {sid: content_hash(self.embedder.name, s.trigger_text) for sid, s in skills.items()}
        changed = sorted(sid for sid, h in want.items() if old.get(sid) != h)
        removed = sorted(set(old) - set(want))
        self._vectors = None
        if removed:
            self._collection.delete(ids=removed)
        if changed:
            vectors = self.embedder.embed([skills[sid].trigger_text for sid in changed])
            self._collection.upsert(
                ids=changed, embeddings=vectors, documents=[skills[sid].trigger_text for sid in changed],
                metadatas=[{"hash": want[sid], "kind": skills[sid].kind} for sid in changed])
        return SyncReport(added=[s for s in changed if s not in old],
                          updated=[s for s in changed if s in old], removed=removed)

    def _load_vectors(self) -> tuple[list[str], np.ndarray]:
        import numpy as np

        if self._vectors is None:
            got = self._collection.get(include=["embeddings"])
            ids = list(got["ids"])
            matrix = np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            self._vectors = ids, matrix / np.where(norms == 0, 1, norms)
        return self._vectors

    def similarities(self, text: str, embedder: Embedder | None = None) -> dict[str, float]:
        """Cosine similarity of `text` to every stored skill, exact (see the module docstring).
        `embedder` embeds the query (default: the store's own; a cache in front of the same model)."""
        import numpy as np

        embedder = embedder or self.embedder
        ids, matrix = self._load_vectors()
        if not ids:
            return {}
        query = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        query /= max(float(np.linalg.norm(query)), 1e-12)
        return dict(zip(ids, (matrix @ query).tolist(), strict=True))
