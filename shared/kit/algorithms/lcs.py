"""Exact longest common subsequences in linear space, for token sequences too long for a table.

rouge_score fills a ``(len(ref) + 1) x (len(can) + 1)`` table: 54 GB for two different 1 MB
texts. Here a table row is a bit vector (one Python ``int``; bit ``y`` clear where the LCS
length grows at column ``y + 1``) and rows are computed by the bit-parallel recurrence of
Allison and Dix / Hyyro (``U = V & M[token]; V = (V + U) | (V - U)``): ``len(A)`` steps on
``len(B)``-bit integers, exact, memory linear in ``len(B)``.

``lcs_ref_indices`` also reads out *which* LCS rouge_score's backtrack picks (its tie rule
decides rougeLsum's union LCS). It keeps every ``K``-th row (``K ~ sqrt(len(A))``) on a first
pass and recomputes one block of ``K`` rows at a time while walking back, so memory stays
``O(sqrt(len(A)) * len(B))`` bits: about 50 MB for two 250k-token sequences.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from math import isqrt

# bit masks of repeated tokens are kept up to this many bytes; the others are rebuilt when used
MASK_CACHE_BYTES = 64 * 2**20
# when every row of one pair fits in this many bytes, the rows are kept (no recomputation)
WHOLE_TABLE_BYTES = 16 * 2**20


class _Masks:
    """Per token of ``a``, the bit mask of its positions in ``b`` (bit ``j`` set where
    ``b[j] == token``); 0 for a token not in ``b``."""

    def __init__(self, b: Sequence[Hashable], a: Sequence[Hashable]) -> None:
        positions: dict[Hashable, list[int]] = {}
        for j, token in enumerate(b):
            positions.setdefault(token, []).append(j)
        self.positions = positions
        self.n = len(b)
        self.repeated = {t for t, k in Counter(a).items() if k > 1 and t in positions}
        self.cache: dict[Hashable, int] = {}
        self.room = MASK_CACHE_BYTES // max(1, (self.n + 7) // 8)

    def __getitem__(self, token: Hashable) -> int:
        mask = self.cache.get(token)
        if mask is not None:
            return mask
        where = self.positions.get(token)
        if where is None:
            return 0
        mask = _mask(where, self.n)
        if token in self.repeated and len(self.cache) < self.room:
            self.cache[token] = mask
        return mask


def _mask(positions: list[int], n: int) -> int:
    if len(positions) <= 8:
        mask = 0
        for j in positions:
            mask |= 1 << j
        return mask
    import numpy as np

    bits = np.zeros(n, dtype=bool)
    bits[positions] = True
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


def _advance(row: int, tokens: Sequence[Hashable], masks: _Masks, full: int) -> int:
    """The row after ``tokens`` (the recurrence, one step per token)."""
    for token in tokens:
        match = masks[token]
        if match:
            u = row & match
            row = ((row + u) | (row - u)) & full
    return row


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of a longest common subsequence of ``a`` and ``b`` (equal to rouge_score's
    ``_lcs_table(a, b)[-1][-1]``), in memory linear in the longer sequence."""
    if len(a) > len(b):
        a, b = b, a  # one step per token of the shorter sequence
    if not a:
        return 0
    full = (1 << len(b)) - 1
    return len(b) - _advance(full, a, _Masks(b, a), full).bit_count()


def lcs_ref_indices(ref: Sequence[Hashable], can: Sequence[Hashable]) -> list[int]:
    """The indices into ``ref`` of the LCS that rouge_score's ``lcs_ind(ref, can)`` returns
    (its backtrack: a match goes diagonally; otherwise left, towards shorter ``can``, only when
    that keeps a strictly longer LCS than going up), in ascending order."""
    if not ref or not can:
        return []
    ref_rows = len(ref) <= len(can)  # rows over the shorter sequence, bits over the longer
    rows_of, bits_of = (ref, can) if ref_rows else (can, ref)
    m, n = len(rows_of), len(bits_of)
    full = (1 << n) - 1
    masks = _Masks(bits_of, rows_of)
    row_bytes = (n + 7) // 8
    step = m + 1 if (m + 1) * row_bytes <= WHOLE_TABLE_BYTES else isqrt(m) + 1
    checkpoints = [full]  # rows 0, step, 2 * step, ...
    if step <= m:
        row = full
        for start in range(0, m - step + 1, step):
            row = _advance(row, rows_of[start:start + step], masks, full)
            checkpoints.append(row)

    block_start = -1
    block: list[int] = []
    block_bits: list[bytes] = []

    def load(x: int) -> None:
        """Rows ``s .. s + step + 1`` with ``s`` the checkpoint at or below ``x - 2``."""
        nonlocal block_start, block, block_bits
        start = (max(x - 2, 0) // step) * step
        if start == block_start:
            return
        row = checkpoints[start // step]
        block = [row]
        for token in rows_of[start:min(start + step + 1, m)]:
            match = masks[token]
            if match:
                u = row & match
                row = ((row + u) | (row - u)) & full
            block.append(row)
        block_bits = [r.to_bytes(row_bytes, "little") for r in block]
        block_start = start

    def value(x: int, y: int) -> int:
        """Table value: LCS length of ``rows_of[:x]`` and ``bits_of[:y]``."""
        return y - (block[x - block_start] & ((1 << y) - 1)).bit_count()

    def bit(x: int, y: int) -> int:
        return (block_bits[x - block_start][y >> 3] >> (y & 7)) & 1

    x, y = m, n
    load(x)
    current = value(x, y)
    above = value(x - 1, y)
    found: list[int] = []
    while x > 0 and y > 0:
        if rows_of[x - 1] == bits_of[y - 1]:
            found.append(x - 1 if ref_rows else y - 1)
            x -= 1
            y -= 1
            current -= 1
            if x:
                load(x)
                above = value(x - 1, y)
            continue
        left = current - 1 + bit(x, y - 1)
        go_left = left > above if ref_rows else not above > left
        if go_left:
            above += bit(x - 1, y - 1) - 1
            current = left
            y -= 1
        else:
            current = above
            x -= 1
            if x:
                load(x)
                above = value(x - 1, y)
    found.reverse()
    return found


def summary_lcs_hits(
    ref_sentences: Sequence[Sequence[Hashable]], can_sentences: Sequence[Sequence[Hashable]]
) -> int:
    """rouge_score's summary-level LCS hits (``_summary_level_lcs``): per reference sentence,
    the union of its LCS indices with every candidate sentence, each token counted at most as
    often as it occurs in both summaries."""
    ref_counts: Counter[Hashable] = Counter()
    can_counts: Counter[Hashable] = Counter()
    for sentence in ref_sentences:
        ref_counts.update(sentence)
    for sentence in can_sentences:
        can_counts.update(sentence)
    hits = 0
    for ref in ref_sentences:
        union: set[int] = set()
        for can in can_sentences:
            union.update(lcs_ref_indices(ref, can))
        for i in sorted(union):
            token = ref[i]
            if can_counts[token] > 0 and ref_counts[token] > 0:
                hits += 1
                can_counts[token] -= 1
                ref_counts[token] -= 1
    return hits


def fmeasure(precision: float, recall: float) -> float:
    """rouge_score's ``scoring.fmeasure``, the same float operations."""
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0
