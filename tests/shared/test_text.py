"""shared.base.text: the accuracy seed's normalisation and Valor's BLEU tokeniser."""

from __future__ import annotations

import gc
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import RegexpTokenizer

from shared import text

# ASCII punctuation, Unicode whitespace and letters, emoji, RTL, combining marks, NUL
ALPHABET = st.sampled_from(
    list(string.printable) + ["\u00a0", "\u2003", "\u3000", "\x1c", "\u0301", "é", "ß", "İ",
                              "😀", "\u05d0", "\u0627", "\x00", "$", ".", "日", "Σ", "Α"]
)
TEXTS = st.text(alphabet=ALPHABET, max_size=60)


def test_seed_examples() -> None:
    assert text.normalize_text("Paris!") == "paris"
    assert text.normalize_text("  Hello,   World!  ") == "hello world"
    assert text.normalize_text("Paris!", lowercase=False) == "Paris"
    assert text.normalize_text("a . b") == "a b"  # punctuation first, then whitespace


def test_comparison_forms_four_modes() -> None:
    values = ["  Paris!  ", "New   York."]
    assert text.comparison_forms(values) == ["paris", "new york"]
    assert text.comparison_forms(values, case_sensitive=True) == ["Paris", "New York"]
    assert text.comparison_forms(values, normalize=False) == ["paris!", "new   york."]
    assert text.comparison_forms(values, case_sensitive=True, normalize=False) == [
        "Paris!", "New   York.",
    ]


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.booleans())
def test_normalize_properties(value: str, lowercase: bool) -> None:
    out = text.normalize_text(value, lowercase=lowercase)
    assert not set(out) & set(string.punctuation)
    assert out == out.strip()
    assert "  " not in out and "\n" not in out and "\t" not in out
    assert text.normalize_text(out, lowercase=lowercase) == out  # idempotent
    assert text.comparison_forms([value], case_sensitive=not lowercase) == [out]
    if lowercase:
        assert out == text.normalize_text(value.lower(), lowercase=False)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_bleu_tokenizer_is_nltks(value: str) -> None:
    assert text.bleu_tokenizer()(value) == RegexpTokenizer(text.BLEU_TOKEN_PATTERN).tokenize(value)


def test_bleu_tokenizer_ignores_periods() -> None:
    assert text.bleu_tokenizer()("It costs $5. Don't e.g. stop.") == [
        "It", "costs", "$5", "Don", "'t", "e", "g", "stop",
    ]


def test_preprocess_phrase_keeps_inner_whitespace() -> None:
    assert text.preprocess_phrase("  The Quick,  brown fox. ") == "the quick  brown fox"
    assert text.preprocess_phrase("A.B", lowercase=False, drop_punctuation=False) == "A.B"


def test_large_and_unusual_strings() -> None:
    big = ("x" * 1000 + " ") * 1000
    assert len(text.normalize_text(big)) == len(big) - 1
    assert len(text.bleu_tokenizer()(big)) == 1000
    weird = "\u202eabc\u202c 😀\x00 e\u0301 مرحبا"
    assert text.bleu_tokenizer()(weird) == RegexpTokenizer(text.BLEU_TOKEN_PATTERN).tokenize(weird)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=6), st.booleans(), st.booleans())
def test_comparison_forms_match_one_by_one(values: list[str], case_sensitive: bool,
                                           normalize: bool) -> None:
    """The joined fast path (and its NUL fallback) equals normalising each text on its own."""
    expected = [
        text.normalize_text(v, lowercase=not case_sensitive) if normalize
        else (v if case_sensitive else v.lower()).strip()
        for v in values
    ]
    assert text.comparison_forms(values, case_sensitive=case_sensitive,
                                 normalize=normalize) == expected


def test_paused_gc_restores_the_collector_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), text.paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("a metric's error")
    assert gc.isenabled()
    gc.disable()
    try:
        with text.paused_gc():
            pass
        assert not gc.isenabled()  # a caller's own choice is left alone
    finally:
        gc.enable()


def test_paused_gc_restores_the_collector_after_nested_and_threaded_uses() -> None:
    import threading

    assert gc.isenabled()
    seen: list[bool] = []
    inside = threading.Event()
    release = threading.Event()

    def other_thread() -> None:
        with text.paused_gc():
            inside.set()
            release.wait(5)
            seen.append(gc.isenabled())

    worker = threading.Thread(target=other_thread)
    with text.paused_gc():
        worker.start()
        assert inside.wait(5)
        with text.paused_gc():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    # the other thread is still inside: the collector stays off until it leaves
    seen.append(gc.isenabled())
    release.set()
    worker.join(5)
    assert seen == [False, False, False, False]
    assert gc.isenabled()


@given(TEXTS, st.integers(min_value=3, max_value=40), st.sampled_from(["...", "…"]))
def test_shorten_keeps_short_texts_and_cuts_long_ones_to_the_limit(
        value: str, limit: int, ellipsis: str) -> None:
    short = text.shorten(value, limit, ellipsis)
    if len(value) <= limit:
        assert short == value
    else:
        assert len(short) == limit and short.endswith(ellipsis)
        assert value.startswith(short[: -len(ellipsis)])


def test_short_reason_is_one_line_within_the_limit() -> None:
    assert text.short_reason(ValueError("bad\n\tanswer  here")) == "bad answer here"
    long = text.short_reason("x " * 400)
    assert len(long) == text.MAX_REASON_CHARS and long.endswith("...") and "\n" not in long
