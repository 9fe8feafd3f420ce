r"""Valor's BLEU tokens as integer ids, found with array operations over the whole corpus.

Valor's pattern \w+|\$[\d]+|[^\s\.]+ depends only on the class of each character: a break
(whitespace or "."), a word character (\w; some of them digits, \d), "$", or any other character.
``findall`` skips breaks; at a word character it takes the run of word characters; at a "$"
followed by a digit it takes "$" and the run of digits; at any other character (or a "$" not
followed by a digit) it takes everything up to the next break. So within a run of non-break
characters (a segment) the tokens are: runs of word characters and "$<digits>" tokens, until the
first "other" start, which takes the rest of the segment. The classes are read off the compiled
tokenizer itself (one probe per distinct character), so they are the engine's own; tokens are
then found with array operations over the whole corpus at once and identified by their
characters packed into 64-bit words, never built as Python strings.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import chain

import numpy as np
import pandas as pd

from ....base import text

_BREAK, _WORD, _DOLLAR, _OTHER = 0, 1, 3, 4


class Unsupported(Exception):
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
        raise Unsupported(char)
    digit = tokenize("$" + char + "$") == ["$" + char, "$"]
    if digit and cls != _WORD:
        raise Unsupported(char)
    return cls, digit


@functools.lru_cache(maxsize=1)
def _ascii_classes() -> tuple[np.ndarray, np.ndarray]:
    tokenize = text.bleu_tokenizer()
    classes = np.zeros(128, dtype=np.uint8)
    digits = np.zeros(128, dtype=bool)
    for code in range(128):
        classes[code], digits[code] = _char_class(chr(code), tokenize)
    if classes[ord("\n")] != _BREAK:  # the separator of the joined texts
        raise Unsupported("\n")
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



def token_ids(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every token of ``texts`` as an integer id (equal ids for equal tokens), texts in order, and
    the number of tokens of each text. Raises ``Unsupported`` for a character outside the model
    above (then ``regex_token_ids`` gives the same ids)."""
    joined = "\n" + "\n".join(texts) + "\n"  # a break before and after every text
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    text_start = np.cumsum(text_len + 1) - text_len
    classes, is_digit, width, packed = _classified(joined)
    token_start, token_end = _token_bounds(classes, is_digit)
    ids = _packed_ids(packed, width, len(joined), token_start, token_end)
    counts = np.diff(np.searchsorted(token_start, text_start), append=token_start.size)
    return ids, counts


def _classified(joined: str) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray], int, bytes]:
    """The class of each character of ``joined``, a digit test by position, and the characters
    as units of ``width`` bytes (``packed``, 8 zero bytes after them)."""
    ascii_classes, ascii_digits = _ascii_classes()
    if joined.isascii() and "\x00" not in joined:
        raw = joined.encode("ascii")
        units = np.frombuffer(raw, dtype=np.uint8)
        classes = np.frombuffer(raw.translate(_ascii_table()), dtype=np.uint8)

        def is_digit(at: np.ndarray) -> np.ndarray:
            return ascii_digits[units[at]]
        return classes, is_digit, 1, raw + bytes(8)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    high = np.flatnonzero(points >= 128)
    codes, distinct = pd.factorize(points[high])  # hashing: no sort of the text
    high_classes, high_digits = _classes_of(np.asarray(distinct))
    classes = np.take(ascii_classes, np.minimum(points, 127))
    classes[high] = high_classes[codes]
    alphabet = 129 + distinct.size  # code 0 stays free: a token's unused units are 0
    dtype = "<u1" if alphabet <= 0xFF else "<u2" if alphabet <= 0xFFFF else "<u4"
    wide = (points + 1).astype(dtype)  # ASCII 1..128, the others 129.. (as factorized)
    wide[high] = codes + 129

    def is_wide_digit(at: np.ndarray) -> np.ndarray:
        unit = wide[at].astype(np.int64)
        low = unit < 129
        out = np.empty(unit.size, dtype=bool)
        out[low] = ascii_digits[unit[low] - 1]
        out[~low] = high_digits[unit[~low] - 129]
        return out
    return classes, is_wide_digit, wide.itemsize, wide.tobytes() + bytes(8)


def _token_bounds(classes: np.ndarray, is_digit: Callable[[np.ndarray], np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every token, in order. Segments (runs of non-break characters) are one
    token each, unless "$" or another non-word character occurs after their first character."""
    token_char = classes != _BREAK
    edges = np.flatnonzero(token_char[1:] != token_char[:-1]) + 1
    seg_start, seg_end = edges[0::2], edges[1::2]
    special = np.flatnonzero(classes >= _DOLLAR)
    if not special.size:
        return seg_start, seg_end
    complex_seg = np.unique(np.searchsorted(seg_start, special, side="right") - 1)
    # a segment opened by a non-word character (not "$") is one token all the same
    complex_seg = complex_seg[classes[seg_start[complex_seg]] != _OTHER]
    if not complex_seg.size:
        return seg_start, seg_end
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
    return token_start, token_end


def _packed_ids(packed: bytes, width: int, size: int, token_start: np.ndarray,
                token_end: np.ndarray) -> np.ndarray:
    """Dense ids of the tokens: up to ``chunk`` characters in one 64-bit word (units in order,
    the unused ones 0), longer tokens word by word."""
    chunk = 8 // width
    words = np.ndarray((size,), dtype="<u8", buffer=packed, strides=(width,))
    masks = np.array([(1 << (8 * width * k)) - 1 for k in range(chunk)] + [(1 << 64) - 1],
                     dtype=np.uint64)
    length = token_end - token_start
    first_word = words[token_start] & masks[np.minimum(length, chunk)]
    long = length > chunk
    if not long.any():
        return _factorize(first_word)
    ids = np.empty(length.size, dtype=np.int64)
    short = ~long
    ids[short] = _factorize(first_word[short])
    ids[long] = _long_token_ids(words, masks, chunk, token_start[long], length[long],
                                first_word[long]) + int(ids[short].max(initial=-1)) + 1
    return ids


def regex_token_ids(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``token_ids`` by the tokenizer itself (for a character outside the model above)."""
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

