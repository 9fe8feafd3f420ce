r"""Text normalisation and tokenisation shared by the lexical metrics (accuracy, BLEU, ...), and
the fence every judge prompt wraps user text in (:func:`fence`).

Plain ``str`` work, plus the third-party ``regex`` engine for the BLEU tokeniser (imported on
first use): nltk's ``RegexpTokenizer`` compiles with ``regex``, whose ``\w``/``\s`` classes differ
from the standard ``re`` (combining marks are word characters; U+001C..U+001F are not
whitespace), and BLEU must tokenise exactly as nltk does.
"""

from __future__ import annotations

import gc
import hashlib
import string
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache

ASCII_PUNCTUATION = string.punctuation
_DROP_PUNCTUATION = str.maketrans("", "", ASCII_PUNCTUATION)

# Valor's BLEU tokeniser (nltk ``RegexpTokenizer`` with this pattern): words, "$<digits>", and any
# other run of characters that are neither whitespace nor a period. Periods are ignored.
BLEU_TOKEN_PATTERN = r"\w+|\$[\d]+|[^\s\.]+"
MAX_REASON_CHARS = 300  # the judge engine's failure reasons (short_reason)


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = True


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while a string metric validates and scores.

    Tokenising and per-sample reference lists build hundreds of thousands of small objects that
    hold no cycles, and every 700 new ones trigger a collection that walks the young objects,
    now and then all of them; ``import evaluate`` leaves ~450k long-lived objects (torch among
    them) for those full collections to rescan. Measured: 100k accuracy pairs 0.6-1.9 s with the
    collector on, 0.28-0.40 s with it off; 10k BLEU pairs 0.4 s one run and 0.7 s the next.
    Reference counting still frees everything. Nested and threaded uses are counted: the
    collector's previous state (a caller's own ``gc.disable()`` included) comes back when the
    last one leaves.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def remove_punctuation(text: str) -> str:
    """``text`` without ASCII punctuation (``string.punctuation``); other characters are kept."""
    return text.translate(_DROP_PUNCTUATION)


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (any Unicode whitespace) become one space; the ends are stripped."""
    return " ".join(text.split())


def normalize_text(text: str, *, lowercase: bool = True, drop_punctuation: bool = True) -> str:
    """The accuracy seed's normalisation: lowercase (optional), remove ASCII punctuation, then
    collapse runs of whitespace, then strip.

    The order matters: ``"a . b"`` becomes ``"a b"`` (removing the period first leaves two spaces,
    which are then collapsed).
    """
    if lowercase:
        text = text.lower()
    if drop_punctuation:
        text = text.translate(_DROP_PUNCTUATION)
    return " ".join(text.split())


def comparison_forms(
    texts: Iterable[str], *, case_sensitive: bool = False, normalize: bool = True
) -> list[str]:
    """The forms two answers are compared in (accuracy's four modes).

    ``normalize``: remove ASCII punctuation, collapse whitespace, strip; otherwise strip only.
    ``case_sensitive=False`` lowercases first.

    Normalisation runs on all texts at once, joined by NUL (neither whitespace nor punctuation,
    so it survives both steps and splits the result back): a few C-level passes instead of
    several method calls per text. Texts that contain NUL themselves take the per-text path.
    """
    texts = list(texts)
    if not normalize:
        if case_sensitive:
            return [t.strip() for t in texts]
        return [t.lower().strip() for t in texts]
    if not texts:
        return []
    joined = "\x00".join(texts)
    if joined.count("\x00") != len(texts) - 1:
        lower = not case_sensitive
        return [normalize_text(t, lowercase=lower) for t in texts]
    if not case_sensitive:
        joined = joined.lower()
    joined = " ".join(joined.translate(_DROP_PUNCTUATION).split())
    return [part.strip() for part in joined.split("\x00")]


def preprocess_phrase(text: str, *, lowercase: bool = True, drop_punctuation: bool = True) -> str:
    """Future AGI's SemanticListContains preprocessing: lowercase, remove ASCII punctuation,
    strip the ends (inner whitespace is kept as is)."""
    if lowercase:
        text = text.lower()
    if drop_punctuation:
        text = text.translate(_DROP_PUNCTUATION)
    return text.strip()


@lru_cache(maxsize=1)
def bleu_tokenizer() -> Callable[[str], list[str]]:
    """``findall`` of Valor's BLEU pattern, compiled as nltk's ``RegexpTokenizer`` compiles it
    (the ``regex`` engine; flags UNICODE | MULTILINE | DOTALL)."""
    import regex

    return regex.compile(BLEU_TOKEN_PATTERN, regex.UNICODE | regex.MULTILINE | regex.DOTALL).findall


def shorten(text: str, limit: int, ellipsis: str = "...") -> str:
    """``text`` when it has at most ``limit`` characters, else its start and ``ellipsis``,
    ``limit`` characters in all."""
    return text if len(text) <= limit else text[: limit - len(ellipsis)] + ellipsis


def short_reason(text: object, limit: int = MAX_REASON_CHARS) -> str:
    """``str(text)`` on one line (whitespace collapsed), at most ``limit`` characters: how the
    judge engine words a failure reason (``Outcome.error``)."""
    return shorten(collapse_whitespace(str(text)), limit)


def fence(label: str, value: str) -> str:
    """Wrap user text in a tag it cannot close: ``<data-LABEL-DIGEST> ... </data-LABEL-DIGEST>``
    (every judge prompt's user text: :mod:`shared.kit.steps.prompts`, the few-shot examples:
    :mod:`shared.kit.few_shot`)."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    tag = f"data-{label}-{digest}"
    return f"<{tag}>\n{value}\n</{tag}>"
