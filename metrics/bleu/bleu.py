"""BLEU as Valor defines it: Valor's regular-expression tokens, nltk ``sentence_bleu`` semantics
per sample (a score below 1e-9 reported as 0.0), and nltk ``corpus_bleu`` over the corpus.

The default path (no smoothing) re-implements nltk's arithmetic operation for operation, so the
floats are identical, without nltk's per-sample ``Fraction`` objects and warnings. A smoothing
method is applied by nltk's own code.

The engine (default path) works on the whole corpus at once with numpy: every distinct text is
tokenised once, by the classes of its characters as the compiled tokenizer itself classifies
them (``_token_ids``; tokens are never built as Python strings, and an unexpected character
falls back to the tokenizer); the clipped n-gram counts come from sorting each sample's n-gram
keys in rows of similar length (``_ngram_statistics``); the final logs, ``fsum`` and ``exp`` are
Python's ``math``, once per distinct argument (``_sentence_scores``). All counting is integer
arithmetic, so exact; samples longer than ``_MAX_ROW`` tokens are counted with ``Counter``.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import evaluate
import numpy as np
import pandas as pd

from shared import (
    Example,
    Input,
    MetricOutput,
    Option,
    SampleResult,
    ValidatedMetric,
    text,
    validation,
    with_results,
)

_CITATION = """\
@inproceedings{papineni2002bleu,
  title={Bleu: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={Proceedings of the 40th Annual Meeting of the ACL},
  pages={311--318},
  year={2002}
}
"""

_DESCRIPTION = """\
BLEU (BiLingual Evaluation Understudy) as in Valor's text-generation metrics: texts are tokenised
with the regular expression \\w+|\\$[\\d]+|[^\\s\\.]+ (periods are ignored), and each prediction is
scored against its reference(s) with nltk's sentence_bleu (uniform 4-gram weights by default, no
smoothing); a score below 1e-9 is reported as 0.0. "bleu" is the mean of the per-sample scores;
"corpus_bleu" is nltk's corpus_bleu over all samples.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the generated texts (may be empty strings).
    references (list of str or list of list of str): one or several references per prediction.
Returns:
    bleu (float): mean of the per-sample scores.
    corpus_bleu (float): nltk corpus_bleu over all samples.
    scores (list of float): per-sample sentence BLEU.
Examples:
    >>> bleu = evaluate.load("metrics/bleu")
    >>> result = bleu.compute(predictions=["the cat sat on the mat"],
    ...                       references=["the cat sat on the mat"])
    >>> result["bleu"]
    1.0
"""

DEFAULT_WEIGHTS = (0.25, 0.25, 0.25, 0.25)
FLOOR = 1e-9
SMOOTHING_METHODS = tuple(f"method{i}" for i in range(8))
_TINY = sys.float_info.min  # nltk method0's stand-in for a zero precision


def _weights(name: str, weights: Any) -> list[float]:
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__"):
        raise TypeError(f"{name} must be a list of numbers, got {type(weights).__name__}")
    if len(weights) == 0:
        raise ValueError(f"{name} is empty; give one weight per n-gram order")
    return validation.weights(name, list(weights), len(weights))


class Bleu(ValidatedMetric):
    INPUTS = (Input("predictions", allow_empty=True), Input("references", kind="texts"))
    OPTIONS = (
        Option("weights", list, DEFAULT_WEIGHTS, check=_weights, type_doc="list of float",
               doc="n-gram weights; their length is the largest n-gram order (BLEU-4 by "
               "default, [0.5, 0.5] for BLEU-2); non-negative, finite, not all zero"),
        Option("smoothing", str, None, nullable=True, choices=SMOOTHING_METHODS,
               doc='None (no smoothing, nltk\'s method0) or the name of an nltk '
               'SmoothingFunction method, "method0" ... "method7"'),
    )
    HEADLINE = ("bleu",)
    DECISION_THRESHOLD = None  # agree: overlap has no natural cut
    EXAMPLE = Example({
        "predictions": ["The cat sat on the mat.", "A quick brown fox jumps over the dog."],
        "references": ["The cat sat on the mat.",
                       ["The quick brown fox jumps over the lazy dog.",
                        "A fast brown fox leaps over the dog."]],
    })
    PAUSES_GC = True

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            codebase_urls=["https://github.com/Striveworks/valor", "https://www.nltk.org/"],
            reference_urls=["https://www.aclweb.org/anthology/P02-1040.pdf"],
        )

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        smoothing: str | None = None,
    ) -> dict[str, Any]:
        if smoothing not in (None, "method0"):
            tokenize = text.bleu_tokenizer()
            with text.paused_gc():
                hypotheses = list(map(tokenize, predictions))
                refs = [list(map(tokenize, sample)) for sample in references]
            return _nltk_scores(hypotheses, refs, weights, smoothing)
        max_n = len(weights)
        numerators, hyp_len, ref_len = _ngram_statistics(predictions, references, max_n)
        denominators = np.maximum(1, hyp_len[:, None] - np.arange(max_n)[None, :])
        scores = _sentence_scores(numerators, denominators, hyp_len, ref_len, weights)
        corpus_num = numerators.sum(axis=0).tolist()
        corpus_den = denominators.sum(axis=0).tolist()
        corpus = _bleu(corpus_num, corpus_den, int(hyp_len.sum()), int(ref_len.sum()), weights)
        return _output(scores, corpus)


# ---------------------------------------------------------------------------------------------
# Tokens. Valor's pattern \w+|\$[\d]+|[^\s\.]+ depends only on the class of each character: a
# break (whitespace or "."), a word character (\w; some of them digits, \d), "$", or any other
# character. ``findall`` skips breaks; at a word character it takes the run of word characters; at
# a "$" followed by a digit it takes "$" and the run of digits; at any other character (or a "$"
# not followed by a digit) it takes everything up to the next break. So within a run of non-break
# characters (a segment) the tokens are: runs of word characters and "$<digits>" tokens, until
# the first "other" start, which takes the rest of the segment. The classes are read off the
# compiled tokenizer itself (one probe per distinct character), so they are the engine's own;
# tokens are then found with array operations over the whole corpus at once and identified by
# their characters packed into 64-bit words, never built as Python strings.
# ---------------------------------------------------------------------------------------------

_BREAK, _WORD, _DOLLAR, _OTHER = 0, 1, 3, 4


class _Unsupported(Exception):
    """A character whose classes do not fit the model above (none known): the regex path."""


def _char_class(char: str, tokenize: Callable[[str], list[str]]) -> tuple[int, bool]:
    """(class, is a digit) of one character, as the compiled tokenizer treats it."""
    if char == "$":
        return _DOLLAR, False
    probe = tokenize(char + "$")
    if probe == ["$"]:
        cls = _BREAK
    elif probe == [char, "$"]:
        cls = _WORD
    elif probe == [char + "$"]:
        cls = _OTHER
    else:
        raise _Unsupported(char)
    digit = tokenize("$" + char + "$") == ["$" + char, "$"]
    if digit and cls != _WORD:
        raise _Unsupported(char)
    return cls, digit


@functools.lru_cache(maxsize=1)
def _ascii_classes() -> tuple[np.ndarray, np.ndarray]:
    tokenize = text.bleu_tokenizer()
    classes = np.zeros(128, dtype=np.uint8)
    digits = np.zeros(128, dtype=bool)
    for code in range(128):
        classes[code], digits[code] = _char_class(chr(code), tokenize)
    if classes[ord("\n")] != _BREAK:  # the separator of the joined texts
        raise _Unsupported("\n")
    return classes, digits


@functools.lru_cache(maxsize=1)
def _ascii_table() -> bytes:
    """``_ascii_classes`` as a ``bytes.translate`` table."""
    return bytes(_ascii_classes()[0].tolist()) + bytes(128)


_CLASS_CACHE: dict[int, tuple[int, bool]] = {}


def _classes_of(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class and digit flag of each distinct non-ASCII code point (cached per process)."""
    tokenize = text.bleu_tokenizer()
    missing = [c for c in codes.tolist() if c not in _CLASS_CACHE]
    for code in missing:
        _CLASS_CACHE[code] = _char_class(chr(code), tokenize)
    pairs = [_CLASS_CACHE[c] for c in codes.tolist()]
    return (np.array([p[0] for p in pairs], dtype=np.uint8),
            np.array([p[1] for p in pairs], dtype=bool))


def _token_ids(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every token of ``texts`` as an integer id (equal ids for equal tokens), texts in order, and
    the number of tokens of each text."""
    joined = "\n" + "\n".join(texts) + "\n"  # a break before and after every text
    size = len(joined)
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    text_start = np.cumsum(text_len + 1) - text_len
    ascii_classes, ascii_digits = _ascii_classes()
    if joined.isascii() and "\x00" not in joined:
        raw = joined.encode("ascii")
        units = np.frombuffer(raw, dtype=np.uint8)
        classes = np.frombuffer(raw.translate(_ascii_table()), dtype=np.uint8)

        def is_digit(at: np.ndarray) -> np.ndarray:
            return ascii_digits[units[at]]
        width = 1
        packed = raw + bytes(8)
    else:
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        high = np.flatnonzero(points >= 128)
        codes, distinct = pd.factorize(points[high])  # hashing: no sort of the text
        high_classes, high_digits = _classes_of(np.asarray(distinct))
        classes = np.take(ascii_classes, np.minimum(points, 127))
        classes[high] = high_classes[codes]
        alphabet = 129 + distinct.size  # code 0 stays free: a token's unused units are 0
        dtype = "<u1" if alphabet <= 0xFF else "<u2" if alphabet <= 0xFFFF else "<u4"
        units = (points + 1).astype(dtype)  # ASCII 1..128, the others 129.. (as factorized)
        units[high] = codes + 129

        def is_digit(at: np.ndarray) -> np.ndarray:
            unit = units[at].astype(np.int64)
            low = unit < 129
            out = np.empty(unit.size, dtype=bool)
            out[low] = ascii_digits[unit[low] - 1]
            out[~low] = high_digits[unit[~low] - 129]
            return out
        width = units.itemsize
        packed = units.tobytes() + bytes(8)

    # segments: runs of non-break characters; one token each, unless "$" or another
    # non-word character occurs after their first character
    token_char = classes != _BREAK
    edges = np.flatnonzero(token_char[1:] != token_char[:-1]) + 1
    seg_start, seg_end = edges[0::2], edges[1::2]
    special = np.flatnonzero(classes >= _DOLLAR)
    if special.size:
        complex_seg = np.unique(np.searchsorted(seg_start, special, side="right") - 1)
        # a segment opened by a non-word character (not "$") is one token all the same
        complex_seg = complex_seg[classes[seg_start[complex_seg]] != _OTHER]
    if not special.size or not complex_seg.size:
        token_start, token_end = seg_start, seg_end
    else:
        starts, ends, owner = _split_segments(classes, is_digit, seg_start[complex_seg],
                                              seg_end[complex_seg])
        # a complex segment's first token takes its place; the others are inserted after it
        lead = np.ones(owner.size, dtype=bool)
        lead[1:] = owner[1:] != owner[:-1]
        token_start, token_end = seg_start.copy(), seg_end.copy()
        token_start[complex_seg] = starts[lead]
        token_end[complex_seg] = ends[lead]
        if not lead.all():
            after = complex_seg[owner[~lead]] + 1
            token_start = np.insert(token_start, after, starts[~lead])
            token_end = np.insert(token_end, after, ends[~lead])

    # ids: up to ``chunk`` characters in one 64-bit word (units in order, the unused ones 0)
    chunk = 8 // width
    words = np.ndarray((size,), dtype="<u8", buffer=packed, strides=(width,))
    masks = np.array([(1 << (8 * width * k)) - 1 for k in range(chunk)] + [(1 << 64) - 1],
                     dtype=np.uint64)
    length = token_end - token_start
    first_word = words[token_start] & masks[np.minimum(length, chunk)]
    long = length > chunk
    if not long.any():
        ids = _factorize(first_word)
    else:
        ids = np.empty(length.size, dtype=np.int64)
        short = ~long
        ids[short] = _factorize(first_word[short])
        ids[long] = _long_token_ids(words, masks, chunk, token_start[long], length[long],
                                    first_word[long]) + int(ids[short].max(initial=-1)) + 1
    counts = np.diff(np.searchsorted(token_start, text_start), append=token_start.size)
    return ids, counts


def _regex_token_ids(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``_token_ids`` by the tokenizer itself (for a character outside the model above)."""
    tokens = list(map(text.bleu_tokenizer(), texts))
    vocabulary: dict[str, int] = {}
    ids = [vocabulary.setdefault(token, len(vocabulary)) for token in chain.from_iterable(tokens)]
    return (np.array(ids, dtype=np.int64),
            np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)))


def _split_segments(classes: np.ndarray, is_digit: Callable[[np.ndarray], np.ndarray],
                    seg_start: np.ndarray, seg_end: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tokens (start, end, index of the segment) of segments that hold "$" or another
    non-word character after a word character, scanned as the pattern scans them."""
    lengths = seg_end - seg_start
    offsets = np.cumsum(lengths) - lengths
    at = np.repeat(seg_start - offsets, lengths) + np.arange(int(lengths.sum()))
    cls = classes[at]
    opens = np.zeros(at.size, dtype=bool)
    opens[offsets] = True
    change = opens.copy()
    change[1:] |= cls[1:] != cls[:-1]
    bound = np.flatnonzero(change)
    start = at[bound]
    end = np.append(at[bound[1:] - 1] + 1, at[-1] + 1)
    run_class = cls[bound]
    first = opens[bound]
    last = np.append(first[1:], True)
    segment = np.cumsum(first) - 1
    # "other" starts; a "$" run starts a "$<digits>" token when it is one "$" before a digit
    other = run_class == _OTHER
    dollars = np.flatnonzero(run_class == _DOLLAR)
    money = dollars[(end[dollars] - start[dollars] == 1) & ~last[dollars]]
    money = money[is_digit(end[money])]
    other[dollars] = True
    other[money] = False
    # runs after an "other" start of their segment belong to its token
    before = np.cumsum(other) - other
    swallowed = before > before[first][segment]
    is_token = (first & (run_class == _WORD)) | (other & ~swallowed)
    token_start = start.copy()
    token_end = np.where(other, seg_end[segment], end)
    money = money[~swallowed[money]]
    if money.size:  # "$" + the digits that open the next (word) run; the rest of it is a word
        after = money + 1
        run_len = end[after] - start[after]
        run_off = np.cumsum(run_len) - run_len
        pos = np.repeat(start[after] - run_off, run_len) + np.arange(int(run_len.sum()))
        stop = np.minimum.reduceat(np.where(is_digit(pos), np.iinfo(np.int64).max, pos), run_off)
        stop = np.minimum(stop, end[after])
        is_token[money] = True
        token_end[money] = stop
        rest = stop < end[after]
        is_token[after[rest]] = True
        token_start[after[rest]] = stop[rest]
    return token_start[is_token], token_end[is_token], segment[is_token]


def _long_token_ids(words: np.ndarray, masks: np.ndarray, chunk: int, starts: np.ndarray,
                    lengths: np.ndarray, first_word: np.ndarray) -> np.ndarray:
    """Ids of the tokens longer than one word: word by word, (id so far, next word) -> new id."""
    current = _factorize(first_word)
    free = int(current.max()) + 1
    position, remaining = starts + chunk, lengths - chunk
    active = np.arange(starts.size)
    while active.size:
        word = words[position[active]] & masks[np.minimum(remaining[active], chunk)]
        word_ids = _factorize(word)
        pair_ids = _factorize(current[active] * (int(word_ids.max()) + 1) + word_ids)
        current[active] = pair_ids + free
        free += int(pair_ids.max()) + 1
        position[active] += chunk
        remaining[active] -= chunk
        active = active[remaining[active] > 0]
    return _factorize(current)


_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying by it is a bijection of 64-bit words


def _factorize(values: np.ndarray) -> np.ndarray:
    """Dense ids of ``values`` (equal values, equal ids) in order of first appearance, by
    pandas' hash table. Packed characters share their low bits, which that table's hash keeps,
    so they are first multiplied by an odd constant (a bijection: no two values meet). The table
    starts small (pandas would size it for every value being distinct) and grows as needed."""
    mixed = values.astype(np.uint64, copy=False) * _MIX
    codes = pd.factorize(mixed, size_hint=min(mixed.size, 1 << 16))[0]
    return codes.astype(np.int64, copy=False)


# ---------------------------------------------------------------------------------------------
# Clipped n-gram counts. Each sample is one row: its hypothesis' tokens, then each reference's,
# each text followed by a separator token of its slot (0 the hypothesis, 1.. the references), then
# padding. Rows of similar length share a 2-D array (one per width class), so every step is one
# array operation over many samples. An n-gram is a key (the tokens' ids in order, then the slot
# of the text it starts in); sorting each row puts equal n-grams of a sample together, the
# hypothesis' first, then reference by reference. An n-gram that runs over a separator or the
# padding never matches one of another slot, so no n-gram needs to be masked out.
# ---------------------------------------------------------------------------------------------

_MAX_ROW = 1 << 20  # longer samples (hypothesis + references, in tokens) are counted by Counter


def _row_width(lengths: np.ndarray) -> np.ndarray:
    """The width class of a row of each length: at most a quarter longer, at least 8."""
    lengths = np.maximum(lengths, 8)
    step = np.left_shift(1, np.maximum(_bit_length(lengths - 1) - 3, 0))
    return (lengths + step - 1) // step * step


def _bit_length(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0, np.frexp(np.maximum(values, 1).astype(np.float64))[1], 0)


def _ngram_statistics(
    predictions: list[str], references: list[list[str]], max_n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: nltk ``modified_precision`` numerators for orders 1..max_n (columns
    0..max_n-1), the hypothesis length, and nltk's ``closest_ref_length``. Each distinct text is
    tokenised once."""
    n_samples = len(predictions)
    with text.paused_gc():
        ref_count = np.fromiter(map(len, references), dtype=np.int64, count=n_samples)
        n_refs = int(ref_count.sum())
        index = dict.fromkeys(predictions)
        index.update(dict.fromkeys(chain.from_iterable(references)))
        if len(index) == n_samples + n_refs:  # every text once: texts in that order
            texts = [*predictions, *chain.from_iterable(references)]
            hyp_text = np.arange(n_samples)
            ref_text = np.arange(n_samples, n_samples + n_refs)
        else:
            texts = list(index)
            index = dict(zip(texts, range(len(texts)), strict=True))
            hyp_text = np.fromiter(map(index.__getitem__, predictions), dtype=np.int64,
                                   count=n_samples)
            ref_text = np.fromiter(map(index.__getitem__, chain.from_iterable(references)),
                                   dtype=np.int64, count=n_refs)
        try:
            ids, count = _token_ids(texts)
        except _Unsupported:
            ids, count = _regex_token_ids(texts)
    offset = np.cumsum(count) - count
    hyp_len = count[hyp_text]
    ref_len = count[ref_text]
    ref_start = np.cumsum(ref_count) - ref_count
    # nltk: the reference length minimising (|len - hyp_len|, len)
    big = int(ref_len.max(initial=0)) + 1
    closeness = np.abs(ref_len - np.repeat(hyp_len, ref_count)) * big + ref_len
    closest = np.minimum.reduceat(closeness, ref_start) % big

    numerators = np.zeros((n_samples, max_n), dtype=np.int64)
    if ids.size == 0:
        return numerators, hyp_len, closest
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
        if w > _MAX_ROW:
            for r, s in enumerate(order[lo:hi].tolist()):
                real = rows_grid[r] < vocabulary
                numerators[s] = _counter_numerators(rows_grid[r][real], rows_slot[r][real], max_n)
            continue
        numerators[order[lo:hi]] = _row_numerators(rows_grid, rows_slot, max_n, token_bits,
                                                   slot_bits)
    return numerators, hyp_len, closest


def _row_numerators(grid: np.ndarray, slot: np.ndarray, max_n: int, token_bits: int,
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


def _sentence_scores(numerators: np.ndarray, denominators: np.ndarray, hyp_len: np.ndarray,
                     ref_len: np.ndarray, weights: Sequence[float]) -> list[float]:
    """``_bleu`` of every sample, the same float operations: the divisions, products and
    comparisons in numpy (IEEE, correctly rounded, as Python's), ``log``, ``exp`` and ``fsum``
    by Python's ``math``, each once per distinct argument; below ``FLOOR``, 0.0."""
    scores = np.zeros(len(hyp_len))
    live = np.flatnonzero(numerators[:, 0] > 0)
    if live.size == 0:
        return scores.tolist()
    num, den = numerators[live], denominators[live]
    # each distinct precision (numerator, denominator) once: its log (nltk's tiny stand-in for 0)
    base = int(den.max()) + 1
    pairs, which = np.unique(num * base + den, return_inverse=True)
    which = which.reshape(num.shape)
    tiny = math.log(_TINY)
    logs = np.array([math.log(n / d) if n else tiny
                     for n, d in zip(*(part.tolist() for part in np.divmod(pairs, base)),
                                     strict=True)])
    # each distinct row of precisions once: exp(fsum(w_i * log p_i))
    if pairs.size ** which.shape[1] < 2**62:
        rows, row_of = np.unique(which @ (pairs.size ** np.arange(which.shape[1])),
                                 return_index=True, return_inverse=True)[1:]
    else:
        rows, row_of = np.arange(len(which)), np.arange(len(which))
    terms = (np.asarray(weights, dtype=np.float64) * logs[which[rows]]).tolist()
    geometric = np.array(list(map(math.exp, map(math.fsum, terms))))[row_of]
    h, r = hyp_len[live], ref_len[live]
    penalty = np.ones(live.size)
    short = h <= r  # hyp_len > 0 here: it has a unigram match
    penalty[short] = list(map(math.exp, (1 - r[short] / h[short]).tolist()))
    score = penalty * geometric
    scores[live] = np.where(score >= FLOOR, score, 0.0)
    return scores.tolist()


def _bleu(
    num: list[int], den: list[int], hyp_len: int, ref_len: int, weights: list[float]
) -> float:
    """nltk ``corpus_bleu``'s final step with ``SmoothingFunction().method0``, same operations.

    ``num[k]``, ``den[k]``: the (k+1)-gram precision's numerator and denominator.
    """
    if num[0] == 0:
        return 0.0
    logs = (w * math.log(num[i] / den[i] if num[i] else _TINY) for i, w in enumerate(weights))
    return float(_brevity_penalty(ref_len, hyp_len) * math.exp(math.fsum(logs)))


def _brevity_penalty(closest_ref_len: int, hyp_len: int) -> float:
    if hyp_len > closest_ref_len:
        return 1
    if hyp_len == 0:
        return 0
    return math.exp(1 - closest_ref_len / hyp_len)


def _nltk_scores(
    hypotheses: list[list[str]], refs: list[list[list[str]]], weights: list[float], smoothing: str
) -> dict[str, Any]:
    """Smoothed BLEU by nltk's own functions (its warnings silenced)."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    method = getattr(SmoothingFunction(), smoothing)
    scores: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for hyp, sample_refs in zip(hypotheses, refs, strict=True):
            score = float(
                sentence_bleu(sample_refs, hyp, weights=weights, smoothing_function=method)
            )
            scores.append(score if score >= FLOOR else 0.0)
        corpus = float(corpus_bleu(refs, hypotheses, weights=weights, smoothing_function=method))
    return _output(scores, corpus)


def _output(scores: list[float], corpus: float) -> MetricOutput:
    values = {"bleu": math.fsum(scores) / len(scores), "corpus_bleu": corpus, "scores": scores}
    return with_results(values, lambda: [SampleResult(score) for score in scores], ["scores"])
