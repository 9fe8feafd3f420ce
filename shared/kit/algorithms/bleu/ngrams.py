"""Clipped n-gram counts (nltk ``modified_precision`` numerators) of every sample at once.

Each sample is one row: its hypothesis' tokens, then each reference's, each text followed by a
separator token of its slot (0 the hypothesis, 1.. the references), then padding. Rows of
similar length share a 2-D array (one per width class), so every step is one array operation
over many samples. An n-gram is a key (the tokens' ids in order, then the slot of the text it
starts in); sorting each row puts equal n-grams of a sample together, the hypothesis' first,
then reference by reference. An n-gram that runs over a separator or the padding never matches
one of another slot, so no n-gram needs to be masked out. All counting is integer arithmetic,
so exact; samples longer than ``MAX_ROW`` tokens are counted with ``Counter``.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np

from ....base import text
from .tokens import Unsupported, regex_token_ids, token_ids

MAX_ROW = 1 << 20  # longer samples (hypothesis + references, in tokens) are counted by Counter


def _row_width(lengths: np.ndarray) -> np.ndarray:
    """The width class of a row of each length: at most a quarter longer, at least 8."""
    lengths = np.maximum(lengths, 8)
    step = np.left_shift(1, np.maximum(_bit_length(lengths - 1) - 3, 0))
    return (lengths + step - 1) // step * step


def _bit_length(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0, np.frexp(np.maximum(values, 1).astype(np.float64))[1], 0)


def ngram_statistics(
    predictions: list[str], references: list[list[str]], max_n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: nltk ``modified_precision`` numerators for orders 1..max_n (columns
    0..max_n-1), the hypothesis length, and nltk's ``closest_ref_length``. Each distinct text is
    tokenised once."""
    n_samples = len(predictions)
    with text.paused_gc():
        ref_count = np.fromiter(map(len, references), dtype=np.int64, count=n_samples)
        texts, hyp_text, ref_text = _distinct_texts(predictions, references, ref_count)
        try:
            ids, count = token_ids(texts)
        except Unsupported:
            ids, count = regex_token_ids(texts)
    hyp_len = count[hyp_text]
    ref_len = count[ref_text]
    # nltk: the reference length minimising (|len - hyp_len|, len)
    big = int(ref_len.max(initial=0)) + 1
    closeness = np.abs(ref_len - np.repeat(hyp_len, ref_count)) * big + ref_len
    closest = np.minimum.reduceat(closeness, np.cumsum(ref_count) - ref_count) % big
    if ids.size == 0:
        return np.zeros((n_samples, max_n), dtype=np.int64), hyp_len, closest
    return _numerators(ids, count, hyp_text, ref_text, ref_count, max_n), hyp_len, closest


def _distinct_texts(predictions: list[str], references: list[list[str]], ref_count: np.ndarray
                    ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each distinct text once, and the index in them of each prediction and each reference."""
    n_samples = len(predictions)
    n_refs = int(ref_count.sum())
    index = dict.fromkeys(predictions)
    index.update(dict.fromkeys(chain.from_iterable(references)))
    if len(index) == n_samples + n_refs:  # every text once: texts in that order
        return ([*predictions, *chain.from_iterable(references)], np.arange(n_samples),
                np.arange(n_samples, n_samples + n_refs))
    texts = list(index)
    index = dict(zip(texts, range(len(texts)), strict=True))
    hyp_text = np.fromiter(map(index.__getitem__, predictions), dtype=np.int64, count=n_samples)
    ref_text = np.fromiter(map(index.__getitem__, chain.from_iterable(references)),
                           dtype=np.int64, count=n_refs)
    return texts, hyp_text, ref_text


def _numerators(ids: np.ndarray, count: np.ndarray, hyp_text: np.ndarray, ref_text: np.ndarray,
                ref_count: np.ndarray, max_n: int) -> np.ndarray:
    """The clipped counts of every sample, from the token ids of the texts (``count`` tokens
    each) and the texts of each sample's hypothesis and references."""
    n_samples = hyp_text.size
    numerators = np.zeros((n_samples, max_n), dtype=np.int64)
    offset = np.cumsum(count) - count
    hyp_len = count[hyp_text]
    ref_len = count[ref_text]
    ref_start = np.cumsum(ref_count) - ref_count
    # rows: the texts (slot 0, 1, ..) each with its separator; width: room for max_n paddings
    slots = ref_count + 1
    row_len = hyp_len + np.add.reduceat(ref_len, ref_start) + slots
    width = _row_width(row_len + max_n)
    order = np.argsort(width, kind="stable")
    slots, row_len = slots[order], row_len[order]
    first_use = np.cumsum(slots) - slots
    slot = np.arange(int(slots.sum())) - np.repeat(first_use, slots)
    use_text = np.empty(slot.size, dtype=np.int64)
    use_text[first_use] = hyp_text[order]
    is_ref = slot > 0
    use_text[is_ref] = ref_text[np.repeat(ref_start[order], slots - 1) + slot[is_ref] - 1]
    use_len = count[use_text]
    max_slot = int(slots.max()) - 1
    vocabulary = int(ids.max()) + 1
    padding = vocabulary + max_slot + 1  # separators: vocabulary + slot
    token_bits = padding.bit_length()
    slot_bits = max(max_slot, 1).bit_length()
    # one flat grid: row after row (sorted by width), each ``width`` cells long; a row holds
    # its texts, each followed by its separator, then padding
    sorted_width = width[order]
    row_cell = np.cumsum(sorted_width) - sorted_width
    use_row = np.repeat(np.arange(n_samples), slots)
    use_cell = row_cell[use_row] + (np.cumsum(use_len + 1) - use_len - 1
                                    - (np.cumsum(row_len) - row_len)[use_row])
    grid = np.full(int(row_cell[-1] + sorted_width[-1]), padding, dtype=np.uint64)
    if use_text.size == count.size:  # each text used once: its tokens go straight to its cells
        text_cell = np.empty(count.size, dtype=np.int64)
        text_cell[use_text] = use_cell
        grid[np.repeat(text_cell - offset, count) + np.arange(ids.size)] = ids
    else:
        use_token = np.cumsum(use_len) - use_len
        step = np.arange(int(use_len.sum())) - np.repeat(use_token, use_len)
        grid[np.repeat(use_cell, use_len) + step] = ids[np.repeat(offset[use_text], use_len)
                                                        + step]
    separator = use_cell + use_len
    grid[separator] = vocabulary + slot
    # slots: +1 after each separator, back to 0 (the padding) after a row's last one
    change = np.ones(slot.size, dtype=np.int64)
    row_last = np.append(slot[1:] == 0, True)
    change[row_last] = -slot[row_last]
    slot_grid = np.zeros(grid.size, dtype=np.int64)
    slot_grid[separator + 1] = change
    slot_grid = np.cumsum(slot_grid).view(np.uint64)
    classes = (np.flatnonzero(np.diff(sorted_width)) + 1).tolist()
    for lo, hi in zip([0, *classes], [*classes, n_samples], strict=True):
        w = int(sorted_width[lo])
        cells = slice(int(row_cell[lo]), int(row_cell[lo]) + (hi - lo) * w)
        rows_grid = grid[cells].reshape(hi - lo, w)
        rows_slot = slot_grid[cells].reshape(hi - lo, w)
        if w > MAX_ROW:
            for r, s in enumerate(order[lo:hi].tolist()):
                real = rows_grid[r] < vocabulary
                numerators[s] = _counter_numerators(rows_grid[r][real], rows_slot[r][real], max_n)
            continue
        numerators[order[lo:hi]] = row_numerators(rows_grid, rows_slot, max_n, token_bits,
                                                   slot_bits)
    return numerators



def row_numerators(grid: np.ndarray, slot: np.ndarray, max_n: int, token_bits: int,
                    slot_bits: int) -> np.ndarray:
    """Clipped n-gram counts of rows of tokens (``grid``) with the slot of each position."""
    n_rows, w = grid.shape
    out = np.zeros((n_rows, max_n), dtype=np.int64)
    pos_bits = max(w - 1, 1).bit_length()
    # a code (an n-gram's ids) must fit with the slot (the key) and with a position (to renumber)
    room = min(63 - slot_bits, 64 - pos_bits)
    if token_bits + pos_bits > room:  # a vast vocabulary: the tokens' ranks in their rows
        grid, token_bits = _row_ranks(grid, pos_bits), pos_bits
    # codes are kept shifted left by slot_bits: key = code | slot
    shift = np.uint64(slot_bits)
    shifted = grid << shift
    code, code_bits = shifted, token_bits
    for n in range(1, max_n + 1):
        cols = w - n + 1
        if n > 1:
            if code_bits + token_bits > room:  # renumber: the (n-1)-grams' ranks in their rows
                code = _row_ranks(code[:, : cols + 1] >> shift, pos_bits) << shift
                code_bits = pos_bits
            code = (code[:, :cols] << np.uint64(token_bits)) | shifted[:, n - 1:]
            code_bits += token_bits
        key = code | slot[:, :cols]
        key.sort(axis=1)
        out[:, n - 1] = _clipped(key, slot_bits)
    return out


def _row_ranks(values: np.ndarray, pos_bits: int) -> np.ndarray:
    """Per row, a rank for each value (equal values, equal ranks; ranks < the row width)."""
    n_rows, w = values.shape
    key = (values << np.uint64(pos_bits)) | np.arange(w, dtype=np.uint64)
    key.sort(axis=1)
    value = key >> np.uint64(pos_bits)
    new = np.empty(key.shape, dtype=np.uint64)
    new[:, 0] = 0
    np.not_equal(value[:, 1:], value[:, :-1], out=new[:, 1:])
    rank = np.cumsum(new, axis=1, dtype=np.uint64)
    out = np.empty_like(rank)
    rows = np.arange(n_rows)[:, None] * w
    out.ravel()[(rows + (key & np.uint64((1 << pos_bits) - 1)).astype(np.int64)).ravel()] = (
        rank.ravel())
    return out


def _clipped(key: np.ndarray, slot_bits: int) -> np.ndarray:
    """Per row of sorted keys (n-gram << slot_bits | slot): the sum over the row's n-grams of
    min(count in slot 0, largest count in another slot). Each row ends with n-grams of padding
    alone (slot 0), which no row begins with, so equal keys never reach across rows."""
    n_rows, w = key.shape
    flat = key.ravel()
    if slot_bits == 1:
        # one reference: an n-gram's hypothesis copies (even key) are followed by its reference
        # copies (odd key). min(h, r) = the number of k >= 1 with k copies on both sides of
        # that boundary j: key[j - k + 1] == key[j] and key[j + k] == key[j + 1].
        odd = np.uint64(1)
        j = np.flatnonzero((flat[1:] ^ flat[:-1]) == odd)
        matched = [j]
        k = 1
        while j.size:
            k += 1
            back, ahead = j - (k - 1), j + k
            ok = (back >= 0) & (ahead < flat.size)
            j = j[ok]
            j = j[(flat[back[ok]] == flat[j]) & (flat[ahead[ok]] == (flat[j] | odd))]
            matched.append(j)
        return np.bincount(np.concatenate(matched) // w, minlength=n_rows)
    new = np.empty(key.shape, dtype=bool)
    new[:, 0] = True
    np.not_equal(key[:, 1:], key[:, :-1], out=new[:, 1:])
    starts = np.flatnonzero(new)
    run_key = flat[starts]
    run_len = np.diff(starts, append=key.size)
    gram = run_key >> np.uint64(slot_bits)
    group = np.empty(gram.size, dtype=bool)
    group[0] = True
    np.not_equal(gram[1:], gram[:-1], out=group[1:])
    group_first = np.flatnonzero(group)
    is_hyp = (run_key & np.uint64((1 << slot_bits) - 1)) == 0
    hyp = np.where(is_hyp[group_first], run_len[group_first], 0)
    ref_max = np.maximum.reduceat(np.where(is_hyp, 0, run_len), group_first)
    clipped = np.minimum(hyp, ref_max)
    return np.bincount(starts[group_first] // w, weights=clipped,
                       minlength=n_rows).astype(np.int64)


def _counter_numerators(token: np.ndarray, slot: np.ndarray, max_n: int) -> np.ndarray:
    """One (very long) sample's clipped counts by Counter, as nltk counts them."""
    hyp = token[slot == 0].tolist()
    refs = [token[slot == k].tolist() for k in range(1, int(slot.max(initial=0)) + 1)]
    out = np.zeros(max_n, dtype=np.int64)
    for n in range(1, max_n + 1):
        counts = Counter(zip(*(hyp[i:] for i in range(n)), strict=False))
        ref_max: Counter = Counter()
        for ref in refs:
            ref_max |= Counter(zip(*(ref[i:] for i in range(n)), strict=False))
        out[n - 1] = sum(min(c, ref_max[g]) for g, c in counts.items())
    return out

