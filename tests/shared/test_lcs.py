"""judge_metrics.lcs: the linear-memory LCS equals rouge_score's table-based one, including which
LCS its backtrack picks (rougeLsum's union depends on it), in both orientations, with the rows kept
whole or recomputed from checkpoints, and with bit masks cached or rebuilt."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from shared import lcs

tokens = st.lists(st.sampled_from("abcde"), max_size=40)


@pytest.fixture(params=["whole", "checkpoints"])
def table_mode(request, monkeypatch) -> str:
    if request.param == "checkpoints":
        monkeypatch.setattr(lcs, "WHOLE_TABLE_BYTES", 1)  # every pair recomputes blocks
    return request.param


def expected_length(a: list, b: list) -> int:
    return rouge_scorer._lcs_table(a, b)[-1][-1] if a and b else 0


@settings(max_examples=300, deadline=None)
@given(tokens, tokens, st.booleans(), st.booleans())
def test_matches_rouge_score(a: list, b: list, checkpoints: bool, no_cache: bool) -> None:
    with pytest.MonkeyPatch.context() as patch:
        if checkpoints:
            patch.setattr(lcs, "WHOLE_TABLE_BYTES", 1)
        if no_cache:
            patch.setattr(lcs, "MASK_CACHE_BYTES", 0)
        assert lcs.lcs_length(a, b) == expected_length(a, b)
        expected = rouge_scorer.lcs_ind(a, b) if a and b else []
        assert lcs.lcs_ref_indices(a, b) == expected


@pytest.mark.parametrize(("n_ref", "n_can", "vocabulary"),
                         [(700, 300, 3), (300, 700, 40), (600, 600, 400)])
def test_longer_sequences(table_mode: str, n_ref: int, n_can: int, vocabulary: int) -> None:
    """Hundreds of tokens: masks built with numpy (more than 8 positions), blocks of rows."""
    rng = random.Random(n_ref * n_can + vocabulary)
    ref = [f"w{rng.randrange(vocabulary)}" for _ in range(n_ref)]
    can = [f"w{rng.randrange(vocabulary)}" for _ in range(n_can)]
    assert lcs.lcs_length(ref, can) == expected_length(ref, can)
    assert lcs.lcs_ref_indices(ref, can) == rouge_scorer.lcs_ind(ref, can)


@settings(max_examples=150, deadline=None)
@given(st.lists(tokens, max_size=4), st.lists(tokens, max_size=4))
def test_summary_level_hits(ref_sentences: list, can_sentences: list) -> None:
    m = sum(map(len, ref_sentences))
    n = sum(map(len, can_sentences))
    expected = rouge_scorer._summary_level_lcs(ref_sentences, can_sentences)
    if m and n:
        hits = lcs.summary_lcs_hits(ref_sentences, can_sentences)
        assert lcs.fmeasure(hits / n, hits / m) == expected.fmeasure
        assert hits / m == expected.recall and hits / n == expected.precision
    else:
        assert expected.fmeasure == 0


def test_memory_is_linear() -> None:
    """20k x 20k tokens: a table would hold 4e8 cells; the rows kept here are
    checkpoints and one block (measured with tracemalloc)."""
    import tracemalloc

    rng = random.Random(0)
    a = [rng.randrange(3000) for _ in range(20_000)]
    b = [rng.randrange(3000) for _ in range(20_000)]
    tracemalloc.start()
    try:
        found = lcs.lcs_ref_indices(a, b)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found) == lcs.lcs_length(a, b) > 0
    assert peak < 60 * 2**20, peak  # a 4e8-cell table of Python ints would be > 3 GB
