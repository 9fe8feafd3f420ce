"""Short-answer QA matching: SQuAD-style normalisation extended for LLM answers, token overlap
(SQuAD's precision, recall, F1) and the recall of a gold answer's content words in a prediction.

Plain ``str`` and ``re`` work, no third-party imports. The normalisation is SQuAD v1.1's
(lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace) with these
extensions, each applied to predictions and references alike:

- punctuation and symbols (any character that is neither a word character nor whitespace, ASCII
  or not) become a **space** instead of being deleted, so hyphenation and possessives do not glue
  words together ("Kevin's" -> "kevin s", "T-Bone" -> "t bone"); a decimal point between digits is
  kept ("0.116");
- accents are folded (NFKD, combining marks dropped: "Röntgen" -> "rontgen");
- words glued by missing spaces are split at a lower-to-upper case change and at a letter/digit
  change ("theRepublican" -> "the republican", "in1978to" -> "in 1978 to");
- numbers get one spelling: ordinal suffixes on digits dropped ("4th" -> "4"), thousands commas
  dropped ("1,000" -> "1000"), trailing decimal zeros dropped ("36.0" -> "36"), number words
  become digits ("three" -> "3", "twenty one" -> "21", "two hundred" -> "200").

On ASCII text without digits, number words, case changes inside a word and punctuation inside a
word, the tokens are exactly SQuAD's (tests compare with the official script's functions).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

ARTICLES = frozenset({"a", "an", "the"})

# English function words: they occur in almost every long answer, so a gold answer's recall must
# not rest on them ("Bank of England" vs "Bank of France" shares "of"). Negations (no, not, never)
# and yes are deliberately absent: they are answers. "s" is what a possessive leaves.
STOP_WORDS = frozenset(
    """
    a an the of in on at to for from by with about as into onto over under between through
    during before after until since within without upon per via and or but nor so yet if then
    than that this these those there here is are was were be been being am do does did done has
    have had having it its it's he him his she her hers they them their theirs we us our ours
    you your yours i me my mine who whom whose which what when where why how s also
    """.split()
)

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split()
)}
_TENS = {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2
)}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}

_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_ORDINAL = re.compile(r"(?<=\d)(?:st|nd|rd|th)\b")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
_NUMBER = re.compile(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+\.\d+")
# anything that is not a word character or whitespace, and "_", except a point between digits
_PUNCTUATION = re.compile(r"(?!(?<=\d)\.(?=\d))[^\w\s]|_")


def _number_spelling(match: re.Match[str]) -> str:
    digits = match.group(0).replace(",", "")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return digits


def _fold_accents(text: str) -> str:
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def qa_tokens(text: str) -> list[str]:
    """The normalised tokens of an answer (module docstring), articles removed."""
    text = _CASE_CHANGE.sub(" ", text)
    text = _fold_accents(text.lower())
    if any(c.isdigit() for c in text):
        text = _ORDINAL.sub("", text)
        text = _LETTER_DIGIT.sub(" ", text)
        text = _NUMBER.sub(_number_spelling, text)
    words = _PUNCTUATION.sub(" ", text).split()
    return _numbers_as_digits([w for w in words if w not in ARTICLES])


def _numbers_as_digits(words: list[str]) -> list[str]:
    """Runs of English number words as one number in digits ("twenty one" -> "21", "two
    hundred" -> "200"); a run ends where the words stop forming one number ("one two" -> "1 2")."""
    if not any(w in _UNITS or w in _TENS or w in _SCALES for w in words):
        return words
    out: list[str] = []
    total = current = 0
    last = ""  # the previous word's kind while a number is being read: unit, tens or scale
    for word in [*words, ""]:
        kind = ("unit" if word in _UNITS else "tens" if word in _TENS
                else "scale" if word in _SCALES else "")
        if last and (
            kind == "unit" and (last == "scale" or last == "tens" and 0 < _UNITS[word] < 10)
            or kind == "tens" and last == "scale"
            or kind == "scale" and (last != "scale" or word != "hundred" and current > 0)
        ):
            if kind == "scale":
                if word == "hundred":
                    current *= 100
                else:
                    total, current = total + current * _SCALES[word], 0
            else:
                current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            last = kind
            continue
        if last:
            out.append(str(total + current))
            total = current = 0
            last = ""
        if kind in ("unit", "tens") or word == "hundred":
            current = _UNITS.get(word, 0) + _TENS.get(word, 0) or (100 if kind == "scale" else 0)
            last = kind
        elif word:
            out.append(word)
    return out


def split_aliases(reference: str, separator: str | None) -> list[str]:
    """``reference`` split at ``separator`` into its aliases (stripped; empty parts dropped);
    ``[reference]`` when ``separator`` is None or nothing is left."""
    if separator is None:
        return [reference]
    parts = [p.strip() for p in reference.split(separator)]
    return [p for p in parts if p] or [reference]


def token_overlap(
    reference: Sequence[str], prediction: Sequence[str]
) -> tuple[float, float, float]:
    """SQuAD's (precision, recall, F1) of two token lists: the multiset intersection over the
    prediction's length, over the reference's length, and their harmonic mean. Both empty: all
    1.0 (SQuAD's rule); one empty: all 0.0."""
    if not reference or not prediction:
        same = float(not reference and not prediction)
        return same, same, same
    common = sum((Counter(reference) & Counter(prediction)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    precision = common / len(prediction)
    recall = common / len(reference)
    return precision, recall, 2 * precision * recall / (precision + recall)


def content_words(reference: Sequence[str], question: Iterable[str] = ()) -> list[str]:
    """The words of a gold answer that can tell a right prediction from a wrong one: neither a
    stop word nor a word of the question (a prediction that restates the question holds those
    whatever its answer). Falls back to the non-stop words, then to all words, when nothing is
    left (an answer made only of question words or stop words)."""
    asked = set(question)
    kept = [w for w in reference if w not in STOP_WORDS and w not in asked]
    if kept:
        return kept
    return [w for w in reference if w not in STOP_WORDS] or list(reference)


def content_recall(
    reference: Sequence[str], prediction: Counter[str], question: Iterable[str] = ()
) -> float:
    """Share of the gold answer's content words (``content_words``, counted with multiplicity)
    that occur in the prediction's token counts; 0.0 for an empty reference."""
    words = content_words(reference, question)
    if not words:
        return 0.0
    found = sum(min(n, prediction[w]) for w, n in Counter(words).items())
    return found / len(words)


# rapidfuzz's partial_ratio is linear in the longer text while the shorter one has at most 64
# characters, and grows with the square of the shorter one beyond (1,000 characters against
# 1 MB: about a second; 10,000 against 100,000: most of a minute). Up to this many characters in
# the shorter text it is computed (about 0.3 s per MB of the longer one at worst); beyond, the
# similarity is taken as 0.0.
PARTIAL_MAX_SHORTER = 256


def partial_similarity(reference: Sequence[str], prediction: Sequence[str]) -> float:
    """How closely some stretch of the prediction matches the whole reference: rapidfuzz's
    ``fuzz.partial_ratio / 100`` of the two token lists joined by spaces (1.0 when the
    reference occurs in the prediction). 0.0 when either is empty or both are longer than
    ``PARTIAL_MAX_SHORTER`` characters."""
    a, b = " ".join(reference), " ".join(prediction)
    if not a or not b or min(len(a), len(b)) > PARTIAL_MAX_SHORTER:
        return 0.0
    from rapidfuzz import fuzz

    return fuzz.partial_ratio(a, b) / 100.0


def nudge(score: float, similarity: float, threshold: float, weight: float) -> float:
    """``score`` moved toward ``similarity`` by ``weight`` within its side of ``threshold``.

    Below the threshold the result is ``threshold * ((1 - weight) * score / threshold + weight *
    similarity)``, at or above it ``threshold + (1 - threshold) * ((1 - weight) * (score -
    threshold) / (1 - threshold) + weight * similarity)``: samples of equal ``score`` are ordered
    by ``similarity``, and the result is >= ``threshold`` exactly when ``score`` is (for ``score``
    and ``similarity`` in [0, 1] and ``weight`` < 1), so the decision never changes.
    """
    if score >= threshold:
        if threshold >= 1.0:
            return score
        position = (score - threshold) / (1.0 - threshold)
        return threshold + (1.0 - threshold) * ((1.0 - weight) * position + weight * similarity)
    below = threshold * ((1.0 - weight) * score / threshold + weight * similarity)
    return min(below, math.nextafter(threshold, 0.0))
