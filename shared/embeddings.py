"""Sentence embeddings: the embedded all-MiniLM-L6-v2 by default, batched and de-duplicated.

A model is loaded once per process (per name) on the CPU, offline. Embeddings are never cached
between calls: each ``embed_texts`` call encodes its distinct texts once, in batches.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .defaults import embedding_model_dir, offline_environment

_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _model_key(name: str | None) -> str:
    if name is None:
        return str(embedding_model_dir())
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"embedding_model must be a model folder or hub id, got {name!r}")
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def load_embedding_model(name: str | None = None) -> Any:
    """A ``SentenceTransformer`` on the CPU, loaded once per process.

    ``name``: ``None`` for the embedded default (``shared.defaults.embedding_model_dir()``), a
    local model folder, or a hub id already in the local Hugging Face cache (nothing is
    downloaded: a missing model raises ``OSError`` naming it).
    """
    key = _model_key(name)
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            offline_environment()
            from sentence_transformers import SentenceTransformer

            try:
                model = SentenceTransformer(key, device="cpu", local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - any loader failure means "not available offline"
                raise OSError(
                    f"embedding_model {name!r} is not available offline: give a local "
                    f"sentence-transformers folder or a hub id already in the cache ({exc})"
                ) from exc
            model.eval()
            _MODELS[key] = model
    return model


def embed_texts(
    texts: Sequence[str], model: Any = None, batch_size: int = 64
) -> np.ndarray:
    """L2-normalised float32 embeddings, one row per entry of ``texts``.

    Each distinct text is encoded once (duplicates share a row's values); ``model`` is a name as
    for ``load_embedding_model`` or an already loaded ``SentenceTransformer``.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if model is None or isinstance(model, str):
        encoder = load_embedding_model(model)
    else:
        encoder = model
    position: dict[str, int] = {}
    rows = [position.setdefault(t, len(position)) for t in texts]
    if not position:
        # sentence-transformers >= 5 renamed get_sentence_embedding_dimension
        get_dimension = getattr(encoder, "get_embedding_dimension", None)
        dim = (get_dimension or encoder.get_sentence_embedding_dimension)() or 0
        return np.zeros((0, dim), dtype=np.float32)
    unique = np.asarray(
        encoder.encode(
            list(position),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )
    if len(unique) == len(rows):
        return unique
    return unique[np.asarray(rows, dtype=np.intp)]


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All-pairs cosine similarity of the rows of ``a`` and ``b`` (shape ``len(a) x len(b)``)."""
    return _unit(a) @ _unit(b).T


def paired_cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``a[i]`` and ``b[i]`` for every row ``i``."""
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    return np.einsum("ij,ij->i", _unit(a), _unit(b))


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)
