"""accuracy: the benchwise document's examples, fuzzy matching against rapidfuzz per pair, the
seeded bootstrap, validation, odd inputs and datasets columns."""

from __future__ import annotations

import math
import random
import string

import evaluate
import numpy as np
import pytest
from datasets import Dataset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from shared import registry


@pytest.fixture(scope="module")
def accuracy() -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path("accuracy"))


def seed_form(value: str, case_sensitive: bool, normalize: bool) -> str:
    """The seed document's comparison form, written out independently of shared.text."""
    if not case_sensitive:
        value = value.lower()
    if not normalize:
        return value.strip()
    value = "".join(ch for ch in value if ch not in string.punctuation)
    return " ".join(value.split())


def test_seed_usage_example(accuracy) -> None:
    result = accuracy.compute(
        predictions=["Paris", "London", "Tokyo"], references=["Paris", "London", "Berlin"]
    )
    assert f"{result['accuracy']:.2%}" == "66.67%"
    assert result["correct"] == 2
    assert result["total"] == 3
    assert result["match_types"] == ["exact", "exact", "none"]
    assert result["individual_scores"] == [1.0, 1.0, 0.0]
    assert "fuzzy_accuracy" not in result and "correct_fuzzy" not in result


@pytest.mark.parametrize(
    ("normalize_text", "case_sensitive", "printed"),
    [(True, False, "100.00%"), (True, True, "50.00%"), (False, False, "50.00%"),
     (False, True, "50.00%")],
)
def test_seed_four_modes(
    accuracy, normalize_text: bool, case_sensitive: bool, printed: str
) -> None:
    result = accuracy.compute(
        predictions=["Paris!", "London"], references=["paris", "London"],
        normalize_text=normalize_text, case_sensitive=case_sensitive,
    )
    assert f"{result['accuracy']:.2%}" == printed


def test_document_order_of_normalisation(accuracy) -> None:
    """Punctuation is removed before whitespace is collapsed (benchwise's code does the reverse
    and would leave two spaces in "a  b")."""
    result = accuracy.compute(predictions=["a . b", "  x\t\ny  "], references=["a b", "X Y"])
    assert result["accuracy"] == 1.0


def _near_miss_corpus(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = ["Paris", "London", "capital", "France", "George", "Orwell", "1984", "wrote", "the"]
    predictions, references = [], []
    for _ in range(n):
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
        pred = list(ref)
        for _ in range(rng.choice([0, 0, 1, 2, 4, 8])):
            pos = rng.randrange(len(pred) + 1)
            pred.insert(pos, rng.choice(string.ascii_letters + "!?.,  "))
        if rng.random() < 0.3:
            pred = list(pred_text.upper() if (pred_text := "".join(pred)) else pred_text)
        predictions.append("".join(pred) or "x")
        references.append(ref)
    return predictions, references


@pytest.mark.parametrize("threshold", [0.0, 0.7, 0.8, 0.95, 1.0])
@pytest.mark.parametrize(("case_sensitive", "normalize_text"), [(False, True), (True, False)])
def test_fuzzy_matches_rapidfuzz_pair_by_pair(
    accuracy, threshold: float, case_sensitive: bool, normalize_text: bool
) -> None:
    predictions, references = _near_miss_corpus(300, seed=int(threshold * 100))
    result = accuracy.compute(
        predictions=predictions, references=references, fuzzy_match=True,
        fuzzy_threshold=threshold, case_sensitive=case_sensitive, normalize_text=normalize_text,
    )
    types, scores = [], []
    for p, r in zip(predictions, references, strict=True):
        a = seed_form(p, case_sensitive, normalize_text)
        b = seed_form(r, case_sensitive, normalize_text)
        if a == b:
            types.append("exact")
            scores.append(1.0)
        elif fuzz.ratio(a, b) / 100.0 >= threshold:
            types.append("fuzzy")
            scores.append(threshold)
        else:
            types.append("none")
            scores.append(0.0)
    assert result["match_types"] == types
    assert result["individual_scores"] == scores
    exact, fuzzy = types.count("exact"), types.count("fuzzy")
    assert 0 < exact < len(types)
    assert result["correct"] == exact
    assert result["correct_fuzzy"] == exact + fuzzy
    assert result["exact_accuracy"] == exact / len(types)
    assert result["fuzzy_accuracy"] == result["accuracy"] == (exact + fuzzy) / len(types)
    assert result["mean_score"] == pytest.approx(float(np.mean(scores)), abs=1e-12)
    assert result["std_score"] == pytest.approx(float(np.std(scores)), abs=1e-12)
    assert result["scores"] == [0.0 if t == "none" else 1.0 for t in types]


def test_seed_fuzzy_example(accuracy) -> None:
    predictions = ["The capital of France is Paris", "Who wrote 1984?"]
    references = ["Paris, France", "George Orwell wrote 'Nineteen Eighty-Four'"]
    strict = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    loose = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True,
                             fuzzy_threshold=0.3)
    ratios = [fuzz.ratio(seed_form(p, False, True), seed_form(r, False, True)) / 100
              for p, r in zip(predictions, references, strict=True)]
    assert strict["match_types"] == ["fuzzy" if x >= 0.8 else "none" for x in ratios]
    assert loose["match_types"] == ["fuzzy" if x >= 0.3 else "none" for x in ratios]
    assert loose["accuracy"] == sum(x >= 0.3 for x in ratios) / 2


def test_confidence_interval(accuracy) -> None:
    predictions, references = _near_miss_corpus(400, seed=7)
    first = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    again = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    other = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True,
                             seed=12345)
    low, high = first["accuracy_confidence_interval"]
    assert first["accuracy_confidence_interval"] == again["accuracy_confidence_interval"]
    assert other["accuracy_confidence_interval"] != first["accuracy_confidence_interval"]
    assert low <= first["accuracy"] <= high
    # the interval is for the fuzzy accuracy (what "accuracy" averages), not the exact one
    assert first["exact_accuracy"] < low
    se = math.sqrt(first["accuracy"] * (1 - first["accuracy"]) / 400)
    assert high - low == pytest.approx(2 * 1.96 * se, rel=0.25)
    quiet = accuracy.compute(predictions=predictions, references=references,
                             return_confidence=False)
    assert "accuracy_confidence_interval" not in quiet


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"references": ["a", None]}, ValueError, "references[1]"),
        ({"predictions": ["a", 3]}, TypeError, "predictions[1]"),
        ({"references": ["a"]}, ValueError, "lengths"),
        ({"references": ["a", " "]}, ValueError, "references[1]"),
        ({"fuzzy_threshold": 1.5}, ValueError, "fuzzy_threshold"),
        ({"fuzzy_threshold": float("nan")}, ValueError, "fuzzy_threshold"),
        ({"fuzzy_threshold": "0.8"}, TypeError, "fuzzy_threshold"),
        ({"case_sensitive": "yes"}, TypeError, "case_sensitive"),
        ({"seed": -1}, TypeError, "seed"),
        ({"predictions": "ab"}, TypeError, "predictions"),
    ],
)
def test_bad_input(accuracy, kwargs: dict, error: type, needle: str) -> None:
    inputs = {"predictions": ["a", "b"], "references": ["a", "c"], **kwargs}
    with pytest.raises(error, match=None) as info:
        accuracy.compute(**inputs)
    assert needle in str(info.value)


def test_unicode_and_huge_strings(accuracy) -> None:
    big = "word " * 200_000  # 1 MB
    predictions = [big, "😀 مرحبا\u202e", "e\u0301\x00", "", "İstanbul", big + "x"]
    references = [big, "😀 مرحبا\u202e", "é\x00", "nothing", "i̇stanbul", big]
    result = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    assert result["match_types"][:2] == ["exact", "exact"]
    assert result["match_types"][3] == "none"
    assert result["match_types"][4] == "exact"  # "İ".lower() is "i̇"
    assert result["match_types"][5] == "fuzzy"
    assert result["total"] == 6


def test_datasets_columns(accuracy) -> None:
    ds = Dataset.from_dict({"prediction": ["Paris", "Rome"], "reference": ["paris", "Madrid"]})
    result = accuracy.compute(predictions=ds["prediction"], references=ds["reference"])
    assert result["accuracy"] == 0.5


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.text(max_size=20), st.text(min_size=1, max_size=20).filter(str.strip)),
        min_size=1, max_size=8,
    ),
    st.booleans(),
    st.floats(0, 1),
)
def test_output_ranges(accuracy, pairs, fuzzy_match: bool, threshold: float) -> None:
    predictions, references = map(list, zip(*pairs, strict=True))
    result = accuracy.compute(predictions=predictions, references=references,
                              fuzzy_match=fuzzy_match, fuzzy_threshold=threshold)
    assert 0.0 <= result["exact_accuracy"] <= result["accuracy"] <= 1.0
    assert 0.0 <= result["mean_score"] <= 1.0 and result["std_score"] >= 0.0
    low, high = result["accuracy_confidence_interval"]
    assert 0.0 <= low <= result["accuracy"] <= high <= 1.0
    assert all(0.0 <= s <= 1.0 for s in result["individual_scores"])
    assert set(result["match_types"]) <= {"exact", "fuzzy", "none"}


def test_load_by_relative_path_from_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(registry.METRICS_DIR.parent)
    assert evaluate.load("metrics/accuracy").name == "accuracy"
