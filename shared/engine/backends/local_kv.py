"""The local judge's key/value states: kept between requests (:class:`KVStore`) and laid out
for a batch (:func:`buffer_cache`).

A causal model's key/value states at position *t* depend on tokens 0..t only, so a request
whose token ids begin with an earlier sequence's can start from that sequence's states and run
only the rest. Two kinds of requests profit, and they are most of the embedded judge's work
(bench/README.md, "local judge"): the requests of one template, which share the chat template's
system prompt and the template's instructions, and the repair of a refused answer, which
re-sends the first conversation and the answer the model just gave before its own correction
request. This is what inference servers call prefix caching; the store here is the plain form of
it: whole sequences, matched on their longest common prefix, the least recently used evicted
first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

# What the store may hold, in bytes. SmolLM2-135M keeps 46 KB per token (30 layers x 2 x 3 heads
# x 64 float32), so 2 GiB is about 45,000 tokens: a first pass of 60 SummEval prompts with their
# answers (the largest call of `make agreement`) stays whole until its repairs have run.
KV_STORE_BYTES = 2 << 30


@dataclass
class KVEntry:
    """One sequence's key/value states: per layer a ``(heads, tokens, head_dim)`` tensor each;
    and the logits of the token after it when they were computed (a prompt's, not an
    answer's), so the same prompt again runs nothing."""

    ids: np.ndarray
    keys: list[Any]
    values: list[Any]
    next_logits: Any = None

    @property
    def nbytes(self) -> int:
        tensors = [*self.keys, *self.values]
        if self.next_logits is not None:
            tensors.append(self.next_logits)
        return sum(t.element_size() * t.nelement() for t in tensors)


class KVStore:
    """Sequences' key/value states, least recently used evicted first beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = KV_STORE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[int, KVEntry] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()
        self._next = 0

    def longest_prefix(self, ids: list[int], limit: int) -> tuple[KVEntry | None, int]:
        """The entry sharing the longest token prefix with ``ids`` (at most ``limit`` tokens),
        and that length; ``(None, 0)`` when none shares a token."""
        wanted = np.asarray(ids[:limit], dtype=np.int64)
        best: tuple[int | None, int] = (None, 0)
        with self.lock:
            for number, entry in self.entries.items():
                length = min(len(entry.ids), len(wanted))
                if length <= best[1]:
                    continue
                differ = np.flatnonzero(entry.ids[:length] != wanted[:length])
                shared = int(differ[0]) if differ.size else length
                if shared > best[1]:
                    best = (number, shared)
            if best[0] is None:
                return None, 0
            self.entries.move_to_end(best[0])
            return self.entries[best[0]], best[1]

    def put(self, ids: list[int], keys: list[Any], values: list[Any],
            next_logits: Any = None) -> None:
        """Keep ``ids``' states (dropping the entries that are a prefix of it: it holds theirs)."""
        entry = KVEntry(np.asarray(ids, dtype=np.int64), keys, values, next_logits)
        if entry.nbytes > self.max_bytes:
            return
        with self.lock:
            for number in [n for n, e in self.entries.items() if is_prefix(e.ids, entry.ids)]:
                self.bytes -= self.entries.pop(number).nbytes
            self.entries[self._next] = entry
            self._next += 1
            self.bytes += entry.nbytes
            while self.bytes > self.max_bytes:
                self.bytes -= self.entries.popitem(last=False)[1].nbytes

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0


def is_prefix(short: np.ndarray, long: np.ndarray) -> bool:
    return len(short) <= len(long) and bool(np.array_equal(short, long[:len(short)]))


def buffer_cache(keys: list[Any], values: list[Any], length: int) -> Any:
    """A transformers ``Cache`` over preallocated per-layer buffers ``(batch, heads, capacity,
    head_dim)`` whose first ``length`` positions hold states: a step writes its states in place
    instead of concatenating a new copy of the whole cache (a quarter of a decode step's time
    at 24 rows of 400 tokens)."""
    from transformers.cache_utils import Cache, DynamicLayer

    class BufferLayer(DynamicLayer):
        def __init__(self, keys: Any, values: Any) -> None:
            super().__init__()
            self.key_buffer, self.value_buffer, self.length = keys, values, length
            self.device, self.is_initialized = keys.device, True
            self.keys, self.values = keys[:, :, :length], values[:, :, :length]

        def update(self, key_states: Any, value_states: Any, *args: Any,
                   **kwargs: Any) -> tuple[Any, Any]:
            end = self.length + key_states.shape[-2]
            if end > self.key_buffer.shape[-2]:  # full: double it (a long answer, rarely)
                self.key_buffer = widen(self.key_buffer, max(end, 2 * self.key_buffer.shape[-2]))
                self.value_buffer = widen(self.value_buffer, self.key_buffer.shape[-2])
            self.key_buffer[:, :, self.length:end] = key_states
            self.value_buffer[:, :, self.length:end] = value_states
            self.length = end
            self.keys, self.values = self.key_buffer[:, :, :end], self.value_buffer[:, :, :end]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length

        def batch_select_indices(self, indices: Any) -> None:
            self.key_buffer = self.key_buffer[indices]
            self.value_buffer = self.value_buffer[indices]
            self.keys = self.key_buffer[:, :, :self.length]
            self.values = self.value_buffer[:, :, :self.length]

    return Cache(layers=[BufferLayer(k, v) for k, v in zip(keys, values, strict=True)])


def widen(buffer: Any, capacity: int) -> Any:
    """``buffer`` with room for ``capacity`` positions (dimension -2), the new ones zeroed."""
    import torch

    shape = (*buffer.shape[:-2], capacity - buffer.shape[-2], buffer.shape[-1])
    return torch.cat([buffer, buffer.new_zeros(shape)], dim=-2)
