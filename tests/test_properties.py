"""Property-based tests (hypothesis): text normalisation, the output range of every non-judge
metric, and the pure arithmetic of the judge metrics (shared/kit/scoring.py,
shared/engine/logprobs.py)."""

from __future__ import annotations

import functools
import math
import os
import string
from pathlib import Path
from typing import Any

import evaluate
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nltk.tokenize import RegexpTokenizer

from shared import scoring, text
from shared.engine import logprobs
from shared.kit.registry import METRICS, available, metric_path

# evaluate's temporary files are shared by every process using the same experiment id; a
# private id keeps other processes' locks from delaying these tests
EXPERIMENT = f"{Path(__file__).stem}-{os.getpid()}"

# ---------------------------------------------------------------- text normalisation

ANY_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
ASCII_PUNCT = set(string.punctuation)


@given(ANY_TEXT, st.booleans(), st.booleans())
def test_normalize_text_shape(value: str, lowercase: bool, drop: bool) -> None:
    out = text.normalize_text(value, lowercase=lowercase, drop_punctuation=drop)
    assert out == out.strip()
    assert "  " not in out
    assert all(c == " " or not c.isspace() for c in out)
    if drop:
        assert not ASCII_PUNCT & set(out)
    assert text.normalize_text(out, lowercase=lowercase, drop_punctuation=drop) == out


@given(ANY_TEXT)
def test_normalize_text_is_the_accuracy_seed_rule(value: str) -> None:
    # the seed: lowercase, remove string.punctuation, collapse whitespace, strip
    expected = " ".join(value.lower().translate(str.maketrans("", "", string.punctuation)).split())
    assert text.normalize_text(value) == expected


@given(st.lists(ANY_TEXT, max_size=5), st.booleans(), st.booleans())
def test_comparison_forms_agree_with_normalize_text(values: list[str], case_sensitive: bool,
                                                    normalize: bool) -> None:
    forms = text.comparison_forms(values, case_sensitive=case_sensitive, normalize=normalize)
    assert len(forms) == len(values)
    for value, form in zip(values, forms, strict=True):
        if normalize:
            assert form == text.normalize_text(value, lowercase=not case_sensitive)
        else:
            assert form == (value if case_sensitive else value.lower()).strip()


@given(ANY_TEXT, st.booleans(), st.booleans())
def test_preprocess_phrase(value: str, lowercase: bool, drop: bool) -> None:
    out = text.preprocess_phrase(value, lowercase=lowercase, drop_punctuation=drop)
    assert out == out.strip()
    if drop:
        assert not ASCII_PUNCT & set(out)
    assert text.preprocess_phrase(out, lowercase=lowercase, drop_punctuation=drop) == out


@given(ANY_TEXT)
def test_bleu_tokenize_matches_nltk(value: str) -> None:
    tokens = text.bleu_tokenizer()(value)
    assert tokens == RegexpTokenizer(text.BLEU_TOKEN_PATTERN).tokenize(value)
    for token in tokens:
        assert token and token in value
        assert "." not in token and " " not in token and "\n" not in token


# ---------------------------------------------------------------- non-judge metrics' range

NON_JUDGE = [n for n in available() if not METRICS[n].judge]
WORDS = st.text(alphabet=st.sampled_from(list("abc XYZ.,!?'é😀\u05e9")), max_size=40)
NON_BLANK = WORDS.filter(lambda s: s.strip() != "")


@functools.cache
def load(name: str) -> evaluate.EvaluationModule:
    return evaluate.load(metric_path(name), experiment_id=EXPERIMENT)


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers(v)]
    return []


@st.composite
def metric_inputs(draw: st.DrawFn, name: str) -> dict[str, Any]:
    n = draw(st.integers(1, 3))
    out: dict[str, Any] = {}
    example = METRICS[name].example.inputs
    for spec in type(load(name)).INPUTS:
        if spec.kind in ("messages", "json") and spec.name in example:
            # a conversation or tool calls: drawn from the metric's example rows
            out[spec.name] = draw(st.lists(st.sampled_from(example[spec.name]),
                                           min_size=n, max_size=n))
            continue
        if not spec.required:
            continue
        if spec.kind == "text":
            item = WORDS if spec.allow_empty else NON_BLANK
        elif spec.kind == "texts":
            item = st.one_of(NON_BLANK, st.lists(NON_BLANK, min_size=1, max_size=3))
        elif spec.kind == "phrases":
            item = st.lists(NON_BLANK, max_size=3)
        else:
            item = st.lists(NON_BLANK, max_size=3)
        out[spec.name] = draw(st.lists(item, min_size=n, max_size=n))
    return out


@pytest.mark.parametrize("name", NON_JUDGE)
def test_non_judge_metric_scores_are_in_unit_interval(name: str) -> None:
    examples = 5 if METRICS[name].embeds else 25

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(metric_inputs(name))
    def check(inputs: dict[str, Any]) -> None:
        result = load(name).compute(**inputs)
        for key in METRICS[name].headline:
            value = result[key]
            assert isinstance(value, float) and 0.0 <= value <= 1.0, (key, value)
        scores = _numbers(result["scores"])
        assert scores, "no per-sample scores"
        assert all(0.0 <= s <= 1.0 for s in scores), result["scores"]

    check()


# ---------------------------------------------------------------- judge arithmetic

FLAGS = st.lists(st.booleans(), max_size=20)
UNIT = st.floats(0.0, 1.0)


@given(FLAGS)
def test_proportion(flags: list[bool]) -> None:
    value = scoring.proportion(flags)
    assert 0.0 <= value <= 1.0
    assert value == (sum(flags) / len(flags) if flags else 0.0)
    assert scoring.proportion([int(f) for f in flags]) == value


@given(FLAGS)
def test_average_precision(flags: list[bool]) -> None:
    value = scoring.average_precision(flags)
    assert 0.0 <= value <= 1.0 + 1e-12
    if any(flags):
        # a useless context in front never helps; moving all useful ones to the front gives 1
        assert scoring.average_precision([False, *flags]) <= value + 1e-12
        ordered = sorted(flags, reverse=True)
        assert scoring.average_precision(ordered) == pytest.approx(1.0)
    else:
        assert value == 0.0


@given(st.lists(FLAGS, min_size=1, max_size=3), st.integers(0, 5))
def test_context_precision_range(per_reference: list[list[bool]], extra: int) -> None:
    n = len(per_reference[0])
    per_reference = [(r + [False] * n)[:n] for r in per_reference]
    value = scoring.context_precision(per_reference, n, len(per_reference))
    assert 0.0 <= value <= 1.0 + 1e-12
    assert scoring.context_precision([], 0, 0) == 1.0
    assert scoring.context_precision([], extra + 1, 0) == 0.0


@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_f1_from_counts(tp: int, fp: int, fn: int) -> None:
    value = scoring.f1_from_counts(tp, fp, fn)
    assert 0.0 <= value <= 1.0
    assert (value == 1.0) == (tp > 0 and fp == 0 and fn == 0)
    if tp:
        precision, recall = tp / (tp + fp), tp / (tp + fn)
        assert value == pytest.approx(2 * precision * recall / (precision + recall))


@given(UNIT, st.floats(-1.0, 1.0), st.tuples(st.floats(0, 10), st.floats(0, 10)))
def test_weighted_score(f1: float, similarity: float, weights: tuple[float, float]) -> None:
    assume(sum(weights) > 0)
    value = scoring.weighted_score(f1, similarity, weights)
    assert 0.0 <= value <= 1.0 + 1e-12
    assert min(f1, max(similarity, 0.0)) - 1e-12 <= value <= max(f1, max(similarity, 0.0)) + 1e-12


@given(UNIT, UNIT)
def test_binarize(score: float, threshold: float) -> None:
    assert scoring.binarize(score, threshold) == (1.0 if score >= threshold else 0.0)
    assert scoring.binarize(score, None) == score


TOKENS = ["Yes", " yes", "YES", "yeah", "No", " no", "NO", "Maybe", "The", "", " ", "y", "n"]


@st.composite
def top_lists(draw: st.DrawFn) -> list[tuple[str, float]]:
    """A top-k list as an API returns it: descending log-probabilities whose probabilities sum
    to at most 1."""
    k = draw(st.integers(0, 5))
    weights = draw(st.lists(st.floats(1e-6, 1.0), min_size=k, max_size=k))
    mass = draw(st.floats(0.01, 1.0))
    total = sum(weights) or 1.0
    logs = sorted((math.log(w / total * mass) for w in weights), reverse=True)
    tokens = draw(st.lists(st.sampled_from(TOKENS), min_size=k, max_size=k))
    return list(zip(tokens, logs, strict=True))


def _first(top: list[tuple[str, float]], words: set[str]) -> float | None:
    return next((lp for t, lp in top if t.strip().lower() in words), None)


@given(top_lists())
def test_l3score_rule(top: list[tuple[str, float]]) -> None:
    value = logprobs.l3score_from_top_logprobs(top)
    assert 0.0 <= value <= 1.0
    yes, no = _first(top, {"yes", "yeah"}), _first(top, {"no"})
    if yes is None and no is None:
        assert value == 0.0
    elif yes is not None and no is not None:
        # the card's rule: exp(l_yes) / (exp(l_yes) + exp(l_no))
        assert value == pytest.approx(math.exp(yes) / (math.exp(yes) + math.exp(no)))
        swapped = [("No" if t.strip().lower() in {"yes", "yeah"} else
                    "Yes" if t.strip().lower() == "no" else t, lp) for t, lp in top]
        assert logprobs.l3score_from_top_logprobs(swapped) == pytest.approx(1.0 - value)
    elif yes is not None:  # the missing side is estimated below the last entry's probability
        assert value >= 0.5 - 1e-9 or math.exp(yes) <= logprobs.MIN_MISSING_PROBABILITY
    else:
        assert value <= 0.5 + 1e-9 or math.exp(no) <= logprobs.MIN_MISSING_PROBABILITY
    breakdown = logprobs.l3score_breakdown(top)
    assert breakdown.score == value


@given(UNIT, UNIT)
def test_exact_yes_probability(p_yes: float, p_no: float) -> None:
    value = logprobs.exact_yes_probability(p_yes, p_no)
    assert 0.0 <= value <= 1.0
    if p_yes + p_no > 0:
        assert value == pytest.approx(p_yes / (p_yes + p_no))
    else:
        assert value == 0.0
