"""The local judge's label tokens: every token whose stripped text is the label counts, and a
label that is no single token is refused (a score read from one next token cannot be "10" on a
tokenizer that splits it). The exact probabilities themselves are checked in
tests/metrics/test_g_eval.py against a forward pass of the model."""

from __future__ import annotations

import pytest

from shared import get_judge, judge_config
from shared.engine.backends.local_labels import label_token_ids


def test_every_variant_of_a_label_counts() -> None:
    texts = ["<s>", "1", " 1", "2", "12", " A", "A", "a", "B\n"]
    assert label_token_ids(texts, ["1", "2"]) == {"1": [1, 2], "2": [3]}
    assert label_token_ids(texts, ["A", "B"]) == {"A": [5, 6], "B": [8]}


def test_a_label_that_is_no_token_is_refused() -> None:
    with pytest.raises(ValueError, match="'10' are not one token"):
        label_token_ids(["1", "0", " 1"], ["1", "10"])


def test_runner_checks_the_labels(cache_dir: str) -> None:
    judge = get_judge(judge_config(cache_dir=cache_dir, show_progress=False))
    for labels in ([], ["A", "A"], [" A", "B"], ["A", ""]):
        with pytest.raises(ValueError, match="labels must be"):
            judge.label_probabilities([], labels)
    assert judge.label_probabilities([], ["A", "B"]) == []
