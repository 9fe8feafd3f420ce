"""BLEU as Valor defines it: Valor's regular-expression tokens, nltk ``sentence_bleu`` semantics
per sample (a score below 1e-9 reported as 0.0), and nltk ``corpus_bleu`` over the corpus.

The default path (no smoothing) re-implements nltk's arithmetic operation for operation, so the
floats are identical, without nltk's per-sample ``Fraction`` objects and warnings. A smoothing
method is applied by nltk's own code.
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
_PAD = np.uint64(1 << 63)  # sorts after every key (keys stay below 2**63)


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
    joined = "\n".join(texts)
    size = len(joined)
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    text_start = np.cumsum(text_len + 1) - text_len - 1
    if size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(len(texts), dtype=np.int64)
    ascii_classes, ascii_digits = _ascii_classes()
    if joined.isascii() and "\x00" not in joined:
        raw = joined.encode("ascii")
        units = np.frombuffer(raw, dtype=np.uint8)
        classes = np.take(ascii_classes, units)

        def is_digit(at: np.ndarray) -> np.ndarray:
            return ascii_digits[units[at]]
        width = 1
        packed = raw + bytes(8)
    else:
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        high = points >= 128
        distinct, inverse = np.unique(points[high], return_inverse=True)
        high_classes, high_digits = _classes_of(distinct)
        classes = np.take(ascii_classes, np.minimum(points, 127))
        classes[high] = high_classes[inverse]
        digit_of = np.zeros(size, dtype=bool)  # only read at a few positions
        digit_of[~high] = ascii_digits[points[~high]]
        digit_of[high] = high_digits[inverse]

        def is_digit(at: np.ndarray) -> np.ndarray:
            return digit_of[at]
        alphabet = 129 + distinct.size  # code 0 stays free: a token's unused bytes are 0
        dtype = "<u1" if alphabet <= 0xFF else "<u2" if alphabet <= 0xFFFF else "<u4"
        units = np.empty(size, dtype=dtype)
        units[~high] = points[~high] + 1
        units[high] = inverse + 129
        width = units.itemsize
        packed = units.tobytes() + bytes(8)

    # runs of one class; the non-break runs, each with its segment's first and last run marked
    change = np.flatnonzero(classes[1:] != classes[:-1]) + 1
    bounds = np.concatenate(([0], change, [size]))
    run_class = classes[bounds[:-1]]
    is_break = run_class == _BREAK
    first = np.concatenate(([True], is_break[:-1]))
    last = np.concatenate((is_break[1:], [True]))
    keep = ~is_break
    start, end, run_class = bounds[:-1][keep], bounds[1:][keep], run_class[keep]
    first, last = first[keep], last[keep]
    if start.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(len(texts), dtype=np.int64)

    # "other" starts; a "$" run starts a "$<digits>" token when it is one "$" before a digit
    other = run_class == _OTHER
    dollars = np.flatnonzero(run_class == _DOLLAR)
    money = dollars[(end[dollars] - start[dollars] == 1) & ~last[dollars]]
    money = money[is_digit(end[money])]
    other[dollars] = True
    other[money] = False
    # runs after an "other" start of their segment belong to its token
    segment = np.cumsum(first) - 1
    before = np.cumsum(other) - other
    swallowed = before > before[first][segment]
    is_token = (first & (run_class == _WORD)) | (other & ~swallowed)
    token_start = start.copy()
    token_end = np.where(other, end[last][segment], end)
    money = money[~swallowed[money]]
    if money.size:  # "$" + the digits that open the next (word) run; the rest of it is a word
        after = money + 1
        lengths = end[after] - start[after]
        offsets = np.cumsum(lengths) - lengths
        at = np.repeat(start[after] - offsets, lengths) + np.arange(int(lengths.sum()))
        stop = np.minimum.reduceat(np.where(is_digit(at), size, at), offsets)
        stop = np.minimum(stop, end[after])
        is_token[money] = True
        token_end[money] = stop
        rest = stop < end[after]
        is_token[after[rest]] = True
        token_start[after[rest]] = stop[rest]
    token_start, token_end = token_start[is_token], token_end[is_token]

    # ids: up to ``chunk`` characters in one 64-bit word (units in order, the unused ones 0)
    chunk = 8 // width
    words = np.ndarray((size,), dtype="<u8", buffer=packed, strides=(width,))
    masks = np.array([(1 << (8 * width * k)) - 1 for k in range(chunk)] + [(1 << 64) - 1],
                     dtype=np.uint64)
    length = token_end - token_start
    first_word = np.take(words, token_start) & masks[np.minimum(length, chunk)]
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
    so they are first multiplied by an odd constant (a bijection: no two values meet)."""
    return pd.factorize(values.astype(np.uint64, copy=False) * _MIX)[0].astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Clipped n-gram counts. Each sample is one row: its hypothesis' tokens, then each reference's.
# Rows of similar length share a 2-D array (one per width class), so every step is one array
# operation over many samples; sorting each row (a key per position) groups equal n-grams of the
# sample, ordered hypothesis first, then reference by reference.
# ---------------------------------------------------------------------------------------------

_MAX_ROW = 1 << 20  # longer samples (hypothesis + references, in tokens) are counted by Counter


def _row_width(lengths: np.ndarray) -> np.ndarray:
    """The width class of a row of each length: up to a quarter longer, at least 8."""
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
        index = dict.fromkeys(predictions)
        index.update(dict.fromkeys(chain.from_iterable(references)))
        index = dict(zip(index, range(len(index))))
        hyp_text = np.fromiter(map(index.__getitem__, predictions), dtype=np.int64,
                               count=n_samples)
        ref_count = np.fromiter(map(len, references), dtype=np.int64, count=n_samples)
        ref_text = np.fromiter(map(index.__getitem__, chain.from_iterable(references)),
                               dtype=np.int64, count=int(ref_count.sum()))
        ids, count = _token_ids(list(index))
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
    row_len = hyp_len + np.add.reduceat(ref_len, ref_start)
    width = _row_width(row_len)
    order = np.argsort(width, kind="stable")
    # the texts of each row in order: hypothesis (slot 0), then references (slots 1..)
    slots = ref_count[order] + 1
    first_use = np.cumsum(slots) - slots
    slot = np.arange(int(slots.sum())) - np.repeat(first_use, slots)
    use_text = np.empty(slot.size, dtype=np.int64)
    use_text[first_use] = hyp_text[order]
    is_ref = slot > 0
    use_text[is_ref] = ref_text[np.repeat(ref_start[order], slots - 1) + slot[is_ref] - 1]
    use_len = count[use_text]
    use_end = np.cumsum(use_len)
    total = int(use_end[-1])
    position = np.arange(total)
    token = ids[np.repeat(offset[use_text] - (use_end - use_len), use_len) + position]
    token_slot = np.repeat(slot, use_len)
    remaining = np.repeat(use_end, use_len) - position  # tokens left in the text
    row_end = np.cumsum(row_len[order])
    row_first = row_end - row_len[order]
    in_row = position - np.repeat(row_first, row_len[order])
    slot_bits = max(int(slots.max()) - 1, 1).bit_length()  # slots 0 .. max - 1
    token_bits = int(ids.max()).bit_length()
    sorted_width = width[order]
    classes = np.flatnonzero(np.diff(sorted_width)) + 1
    for lo, hi in zip(np.concatenate(([0], classes)).tolist(),
                      np.concatenate((classes, [n_samples])).tolist(), strict=True):
        w = int(sorted_width[lo])
        rows = order[lo:hi]
        a, b = int(row_first[lo]), int(row_end[hi - 1])
        if w > _MAX_ROW or token_bits + slot_bits + max(w - 1, 1).bit_length() > 62:
            for r, s in enumerate(rows.tolist()):
                ra, rb = int(row_first[lo + r]), int(row_end[lo + r])
                numerators[s] = _counter_numerators(token[ra:rb], token_slot[ra:rb], max_n)
            continue
        flat = (np.repeat(np.arange(hi - lo), row_len[rows]) * w + in_row[a:b])
        numerators[rows] = _row_numerators(
            hi - lo, w, flat, token[a:b], token_slot[a:b], remaining[a:b], max_n,
            slot_bits, token_bits,
        )
    return numerators, hyp_len, closest


def _row_numerators(n_rows: int, w: int, flat: np.ndarray, token: np.ndarray,
                    slot: np.ndarray, remaining: np.ndarray, max_n: int, slot_bits: int,
                    token_bits: int) -> np.ndarray:
    """Clipped n-gram counts of rows of width ``w`` (the positions ``flat`` of a row-major
    n_rows x w array hold the tokens; the rest is padding)."""
    out = np.zeros((n_rows, max_n), dtype=np.int64)
    pos_bits = max(w - 1, 1).bit_length()
    column = np.arange(w, dtype=np.uint64)
    # order 1, sorted with each position, also gives each token's rank in its row
    pad = np.uint64(1 << (token_bits + slot_bits))  # above every (token, slot) value
    key = np.full(n_rows * w, pad, dtype=np.uint64)
    key[flat] = token.astype(np.uint64) << np.uint64(slot_bits) | slot.astype(np.uint64)
    key = key.reshape(n_rows, w) << np.uint64(pos_bits) | column
    key.sort(axis=1)
    out[:, 0] = _clipped(key >> np.uint64(pos_bits), slot_bits, pad)
    gram = key >> np.uint64(pos_bits + slot_bits)
    new = np.empty(key.shape, dtype=np.uint64)
    new[:, 0] = 0
    np.not_equal(gram[:, 1:], gram[:, :-1], out=new[:, 1:])
    rank = np.cumsum(new, axis=1, dtype=np.uint64)
    local = np.empty((n_rows, w), dtype=np.uint64)
    rows = np.arange(n_rows)[:, None] * w
    local.ravel()[(rows + (key & np.uint64((1 << pos_bits) - 1)).astype(np.int64)).ravel()] = (
        rank.ravel())
    if max_n == 1:
        return out
    slot2d = np.zeros(n_rows * w, dtype=np.uint64)
    slot2d[flat] = slot
    slot2d = slot2d.reshape(n_rows, w)
    left = np.zeros(n_rows * w, dtype=np.int64)
    left[flat] = remaining
    left = left.reshape(n_rows, w)
    code, code_bits = local, pos_bits
    shift = np.uint64(slot_bits)
    for n in range(2, max_n + 1):
        cols = w - n + 1
        if cols <= 0:
            break
        valid = left[:, :cols] >= n
        if not valid.any():
            break
        if code_bits + 2 * pos_bits + slot_bits > 63:
            code = _row_ranks(code[:, : cols + 1], left[:, : cols + 1] >= n - 1, pos_bits)
            code_bits = pos_bits
        code = code[:, :cols] * np.uint64(w) + local[:, n - 1:]
        code_bits += pos_bits
        key = np.where(valid, code << shift | slot2d[:, :cols], _PAD)
        key.sort(axis=1)
        out[:, n - 1] = _clipped(key, slot_bits, _PAD)
    return out


def _row_ranks(values: np.ndarray, valid: np.ndarray, pos_bits: int) -> np.ndarray:
    """Per row, a rank for each value (equal values, equal ranks; ranks < the row width)."""
    n_rows, w = values.shape
    key = np.where(valid, values, _PAD >> np.uint64(pos_bits)) << np.uint64(pos_bits)
    key |= np.arange(w, dtype=np.uint64)
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


def _clipped(key: np.ndarray, slot_bits: int, pad: np.uint64) -> np.ndarray:
    """Per row of sorted keys (n-gram << slot_bits | slot; ``pad`` for none): the sum over the
    row's n-grams of min(count in slot 0, largest count in another slot)."""
    n_rows, w = key.shape
    new = np.empty(key.shape, dtype=bool)
    new[:, 0] = True
    np.not_equal(key[:, 1:], key[:, :-1], out=new[:, 1:])
    starts = np.flatnonzero(new)
    run_key = key.ravel()[starts]
    run_len = np.diff(starts, append=key.size)
    real = run_key != pad
    starts, run_key, run_len = starts[real], run_key[real], run_len[real]
    if starts.size == 0:
        return np.zeros(n_rows, dtype=np.int64)
    row = starts // w
    if slot_bits == 1:  # one reference: a hypothesis run followed by the reference's run
        pair = (run_key[1:] == run_key[:-1] + np.uint64(1)) & (row[1:] == row[:-1])
        pair &= (run_key[:-1] & np.uint64(1)) == 0
        matched = np.minimum(run_len[:-1], run_len[1:])[pair]
        return np.bincount(row[:-1][pair], weights=matched, minlength=n_rows).astype(np.int64)
    gram = run_key >> np.uint64(slot_bits)
    group = np.empty(gram.size, dtype=bool)
    group[0] = True
    np.not_equal(gram[1:], gram[:-1], out=group[1:])
    group[1:] |= row[1:] != row[:-1]
    group_first = np.flatnonzero(group)
    is_hyp = (run_key & np.uint64((1 << slot_bits) - 1)) == 0
    hyp = np.where(is_hyp[group_first], run_len[group_first], 0)
    ref_max = np.maximum.reduceat(np.where(is_hyp, 0, run_len), group_first)
    clipped = np.minimum(hyp, ref_max)
    return np.bincount(row[group_first], weights=clipped, minlength=n_rows).astype(np.int64)


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
    by Python's ``math``; below ``FLOOR``, 0.0."""
    scores = np.zeros(len(hyp_len))
    live = np.flatnonzero(numerators[:, 0] > 0)
    if live.size == 0:
        return scores.tolist()
    num, den = numerators[live], denominators[live]
    ratio = num / den
    matched = num > 0
    logs = np.full(num.shape, math.log(_TINY))
    logs[matched] = list(map(math.log, ratio[matched].tolist()))
    terms = (np.asarray(weights, dtype=np.float64) * logs).tolist()
    geometric = np.array(list(map(math.exp, map(math.fsum, terms))))
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
