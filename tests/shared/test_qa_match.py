"""judge_metrics.qa_match: the QA normalisation by hand, SQuAD's normalisation on its own domain,
the content words, and the tie-break that never changes a decision."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared import qa_match


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The Beatles!", ["beatles"]),
        ("three", ["3"]),
        ("twenty-one", ["21"]),
        ("one two three", ["1", "2", "3"]),
        ("three thousand five hundred", ["3500"]),
        ("one hundred and five", ["100", "and", "5"]),
        ("1,000,000 people", ["1000000", "people"]),
        ("0.116 mm", ["0.116", "mm"]),
        ("36.0", ["36"]),
        ("July 4th", ["july", "4"]),
        ("in1978to", ["in", "1978", "to"]),
        ("theRepublican Party", ["republican", "party"]),
        ("Kevin's T-Bone", ["kevin", "s", "t", "bone"]),
        ("Wilhelm Röntgen", ["wilhelm", "rontgen"]),
        ("“Quoted” — dash", ["quoted", "dash"]),
        ("", []),
    ],
)
def test_qa_tokens_by_hand(text: str, tokens: list[str]) -> None:
    assert qa_match.qa_tokens(text) == tokens


_WORD = st.sampled_from(["the", "a", "an", "Paris", "river", "SEINE", "of", "The", "old", "An"])
_END = st.sampled_from(["", "", ".", ",", "!", "?", ")", "'", '"', ";"])


@settings(deadline=None)  # the first example imports torchmetrics (and torch)
@given(st.lists(st.tuples(_WORD, _END), max_size=12), st.sampled_from([" ", "  ", "\t", " \n "]))
def test_squad_domain_equals_official_normalisation(words: list[tuple[str, str]], gap: str) -> None:
    """On its documented domain (ASCII words, punctuation at word ends, no digits) the QA
    normalisation is the official SQuAD script's (torchmetrics' port of it)."""
    from torchmetrics.functional.text.squad import _normalize_text

    text = gap.join(w + e for w, e in words)
    assert " ".join(qa_match.qa_tokens(text)) == _normalize_text(text)


def test_split_aliases() -> None:
    assert qa_match.split_aliases("A / B/ /C", "/") == ["A", "B", "C"]
    assert qa_match.split_aliases("AC/DC", None) == ["AC/DC"]
    assert qa_match.split_aliases(" / ", "/") == [" / "]


def test_content_words() -> None:
    reference = qa_match.qa_tokens("Shastri Park metro station")
    question = qa_match.qa_tokens("nearest metro station to gandhi nagar")
    assert qa_match.content_words(reference, question) == ["shastri", "park"]
    assert qa_match.content_words(qa_match.qa_tokens("of the"), ()) == ["of"]
    assert qa_match.content_words(["metro"], ["metro"]) == ["metro"]  # only question words


def test_token_overlap_edges() -> None:
    assert qa_match.token_overlap([], []) == (1.0, 1.0, 1.0)
    assert qa_match.token_overlap(["a"], []) == (0.0, 0.0, 0.0)
    assert qa_match.token_overlap(["x", "x", "y"], ["x", "z"]) == pytest.approx(
        (1 / 2, 1 / 3, 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3)))


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 0.99))
def test_nudge_keeps_the_decision(score: float, similarity: float, threshold: float,
                                  weight: float) -> None:
    nudged = qa_match.nudge(score, similarity, threshold, weight)
    assert 0.0 <= nudged <= 1.0
    assert (nudged >= threshold) == (score >= threshold)


def test_partial_similarity_is_bounded() -> None:
    assert qa_match.partial_similarity(["paris"], ["it", "is", "paris"]) == 1.0
    long = ["word"] * 100
    assert qa_match.partial_similarity(long, long) == 0.0  # both over 256 characters
