"""Sentence embeddings: the embedded all-MiniLM-L6-v2 by default, batched and de-duplicated.

A model is loaded once per process (per name) on the CPU, offline. Embeddings are never cached
between calls: each ``embed_texts`` call encodes its distinct texts once, in batches.

Long texts. A sentence-transformers model reads at most ``max_seq_length`` word pieces (256 for
MiniLM, special tokens included) and silently drops the rest. ``text_windows`` splits a longer
text into overlapping windows the model reads whole (``window_pieces`` = the model's window less
its special tokens and a small margin, every ``window_pieces // 2`` pieces, so any span of up to
half a window lies whole inside one window), at most ``MAX_WINDOWS`` per text: beyond that the
text is cut (the metrics say so in their details). ``embed_windows`` encodes every distinct
window once, in the same batched call as the short texts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..base.defaults import embedding_model_dir, offline_environment, require_local

_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()

# Windows per text: 32 windows of MiniLM cover ~4,000 word pieces (~20 KB of English). Encoding
# a full 256-piece window costs ~30 ms of CPU, so a 1 MB text would take about a minute and a
# batch of them hours; a text longer than this is compared on its first MAX_WINDOWS windows and
# flagged as cut.
MAX_WINDOWS = 32
# word pieces kept free in each window: re-tokenising a window's text can split its first word
# differently from the whole text (a word cut in the middle)
_WINDOW_MARGIN = 8


@dataclass(frozen=True)
class TextWindows:
    """How a text is read by the embedding model: ``parts`` is ``(text,)`` when it fits in the
    model's window, else the texts of its overlapping windows; ``cut`` when it had more than
    ``max_windows`` windows and only the first were kept."""

    parts: tuple[str, ...]
    cut: bool = False

    @property
    def windowed(self) -> bool:
        return len(self.parts) > 1 or self.cut


def _model_key(name: str | None) -> str:
    if name is None:
        return str(embedding_model_dir())
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"embedding_model must be a model folder or hub id, got {name!r}")
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def load_embedding_model(name: str | None = None) -> Any:
    """A ``SentenceTransformer`` on the CPU, loaded once per process.

    ``name``: ``None`` for the embedded default (``shared.base.defaults.embedding_model_dir()``), a
    local model folder, or a hub id already in the local Hugging Face cache (nothing is
    downloaded: a missing model raises ``OSError`` naming it).
    """
    require_local("the embedding model")
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


def window_pieces(encoder: Any) -> int:
    """Word pieces of text in one window of ``encoder`` (its limit less special tokens and a
    margin)."""
    limit = int(getattr(encoder, "max_seq_length", None) or 512)
    tokenizer = encoder.tokenizer
    special = tokenizer.num_special_tokens_to_add(pair=False)
    return max(8, limit - special - _WINDOW_MARGIN)


def text_windows(texts: Sequence[str], model: Any = None,
                 max_windows: int = MAX_WINDOWS) -> list[TextWindows]:
    """Per text, how the model reads it whole (see the module's docstring).

    A text of at most ``window // 4`` characters fits without tokenising (a word piece covers
    at least one character, and normalisation expands a character into at most a few); the
    others are tokenised once, in one batch, with character offsets. Only a prefix of a very
    long text is tokenised: enough for ``max_windows`` windows at 32 characters per piece.
    """
    encoder = load_embedding_model(model) if model is None or isinstance(model, str) else model
    window = window_pieces(encoder)
    stride = window // 2
    needed = (max_windows - 1) * stride + window  # pieces read at most
    out: dict[str, TextWindows] = {}
    long: list[str] = []
    for t in dict.fromkeys(texts):
        if len(t) <= window // 4:
            out[t] = TextWindows((t,))
        else:
            long.append(t)
    if long:
        heads = [t[:(needed + 1) * 32] for t in long]
        encoded = encoder.tokenizer(heads, add_special_tokens=False, return_offsets_mapping=True,
                                    verbose=False)
        for t, head, offsets in zip(long, heads, encoded["offset_mapping"], strict=True):
            if len(head) < len(t) and len(offsets) <= needed:  # a prefix too short: all of it
                offsets = encoder.tokenizer(t, add_special_tokens=False,
                                            return_offsets_mapping=True,
                                            verbose=False)["offset_mapping"]
            n = len(offsets)
            if n <= window:
                out[t] = TextWindows((t,))
                continue
            cut = n > needed
            n = min(n, needed)
            starts = list(range(0, n - window + stride, stride))
            parts = tuple(
                t[offsets[start][0]:offsets[min(start + window, n) - 1][1]] for start in starts
            )
            out[t] = TextWindows(parts, cut)
    return [out[t] for t in texts]


def embed_windows(texts: Sequence[str], model: Any = None, batch_size: int = 64
                  ) -> tuple[np.ndarray, list[list[int]], list[TextWindows]]:
    """Embeddings of every distinct text and window, encoded once in one batched call
    (``embed_texts``): the L2-normalised rows, per text the rows of its windows (one row when it
    fits: exactly ``embed_texts``'s row for it), and how each text was windowed."""
    encoder = load_embedding_model(model) if model is None or isinstance(model, str) else model
    windows = text_windows(texts, encoder)
    parts: dict[str, int] = {}
    rows = [[parts.setdefault(part, len(parts)) for part in w.parts] for w in windows]
    return embed_texts(list(parts), encoder, batch_size=batch_size), rows, windows


def pooled(vectors: np.ndarray, rows: list[list[int]]) -> np.ndarray:
    """One L2-normalised row per text: its only row, or the normalised mean of its windows'."""
    out = vectors[[r[0] for r in rows]]
    for k, r in enumerate(rows):
        if len(r) > 1:
            mean = vectors[r].mean(axis=0)
            out[k] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return out
