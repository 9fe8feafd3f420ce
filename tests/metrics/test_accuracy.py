"""accuracy: the benchwise document's examples, fuzzy matching against rapidfuzz per pair, the
seeded bootstrap, validation, odd inputs and datasets columns."""

from __future__ import annotations

import json
import math
import random
import string
from pathlib import Path

import evaluate
import numpy as np
import pytest
from datasets import Dataset
from hypothesis import given
from hypothesis import strategies as st
from input_checks import assert_refused
from property_checks import columns, examples, text_pairs
from rapidfuzz import fuzz

from shared.kit import registry


@pytest.fixture(scope="module")
def accuracy() -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path("accuracy"))


def seed_form(value: str, case_sensitive: bool, normalize: bool) -> str:
    """The seed document's comparison form, written out independently of shared.base.text."""
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
    assert_refused(accuracy, error, needle, **kwargs)


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


@examples(25)
@given(text_pairs(max_size=20, max_rows=8), st.booleans(), st.floats(0, 1))
def test_output_ranges(accuracy, pairs, fuzzy_match: bool, threshold: float) -> None:
    predictions, references = columns(pairs)
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


# ------------------------------------------------------------------ several references, QA modes

# the project's copy (bench/agreement/data), else the shared folder beside the repo
_REPO = Path(__file__).resolve().parents[2]
EVOUNA = next(
    (p for p in (_REPO / "bench" / "agreement" / "data", _REPO.parent / "shared" / "agreement")
     if (p / "answer_equivalence_evouna_nq.jsonl").exists()), _REPO
) / "answer_equivalence_evouna_nq.jsonl"


def test_several_references_exact_and_fuzzy(accuracy) -> None:
    predictions = ["Paris!", "Londn", "Rome"]
    references = [["Lyon", "paris"], ["Berlin", "London", "Londres"], "Madrid"]
    result = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    assert result["match_types"] == ["exact", "fuzzy", "none"]
    # the fuzzy pick is the alias with the highest fuzz.ratio
    ratios = [fuzz.ratio("londn", seed_form(r, False, True)) for r in references[1]]
    assert result["best_reference"] == [1, ratios.index(max(ratios)), 0]
    assert result["scores"] == [1.0, 1.0, 0.0]
    single = accuracy.compute(predictions=["Paris"], references=["Paris"])
    assert "best_reference" not in single  # the seed's keys for one reference per sample


def test_reference_separator_is_explicit(accuracy) -> None:
    prediction = ["Wilhelm Conrad Röntgen"]
    reference = ["Wilhelm Röntgen / Wilhelm Conrad Röntgen"]
    assert accuracy.compute(predictions=prediction, references=reference)["accuracy"] == 0.0
    split = accuracy.compute(predictions=prediction, references=reference,
                             reference_separator="/")
    assert split["accuracy"] == 1.0 and split["best_reference"] == [1]


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("The Beatles", "beatles"),            # articles (SQuAD)
        ("An apple.", "apple"),
        ("Paris, France!", "paris france"),    # punctuation, case
        ("  New \t York ", "new york"),        # whitespace
        ("three", "3"),                        # numbers written as words
        ("twenty-one", "21"),
        ("Twenty one guns", "21 guns"),
        ("2,000 metres", "2000 metres"),
        ("July 4th", "july 4"),
        ("36.0", "36"),
        ("Wilhelm Röntgen", "Wilhelm Rontgen"),  # accents folded
    ],
)
def test_qa_normalisation_makes_equal(accuracy, prediction: str, reference: str) -> None:
    result = accuracy.compute(predictions=[prediction], references=[reference], mode="f1")
    assert result["match_types"] == ["exact"] and result["individual_scores"] == [1.0]
    assert result["exact_accuracy"] == 1.0


@pytest.mark.parametrize(("prediction", "reference"), [("3", "4"), ("thirty", "3"),
                                                        ("1.5", "15"), ("Paris", "Lyon")])
def test_qa_normalisation_keeps_apart(accuracy, prediction: str, reference: str) -> None:
    result = accuracy.compute(predictions=[prediction], references=[reference], mode="f1")
    assert result["match_types"] == ["none"] and result["individual_scores"] == [0.0]


def test_contains_a_short_answer_inside_a_long_sentence(accuracy) -> None:
    predictions = [
        "The Spanish Steps (Scalinata di Trinità dei Monti) are located in Rome, Italy.",
        "In the movie, the character Pink was played by Bob Geldof.",
        "It was signed in 1978 to protect the rights of consumers.",
        "Pia mater",
    ]
    references = ["Rome", "Kevin McKeon as Young Pink/Bob Geldof/David Bingham",
                  "November 10, 1978/in 1978", "the pia mater"]
    result = accuracy.compute(predictions=predictions, references=references, mode="contains",
                              reference_separator="/")
    assert result["accuracy"] == 1.0
    assert result["match_types"] == ["contains", "contains", "contains", "exact"]
    assert result["best_reference"] == [0, 1, 1, 0]
    # all content words found and the answer verbatim in the text: the top score
    assert result["individual_scores"][:3] == [1.0, 1.0, 1.0]


def test_stop_words_and_question_words_do_not_decide(accuracy) -> None:
    """A wrong answer that shares only stop words with the gold answer, and one that shares only
    the words the question already holds, are not counted correct; a plain SQuAD recall would
    give them credit."""
    question = "nearest metro station to gandhi nagar in delhi"
    predictions = ["It is the Constitution of the United States.",
                   "The nearest one is the Welcome Metro Station on the Red Line."]
    references = ["the Declaration of Independence", "Shastri Park metro station"]
    contains = accuracy.compute(predictions=predictions, references=references,
                                questions=["what did congress adopt in 1776", question],
                                mode="contains")
    assert contains["match_types"] == ["none", "none"] and contains["accuracy"] == 0.0
    assert contains["individual_scores"][0] < 0.1  # no content word: only the tie-break
    squad_recall = accuracy.compute(predictions=predictions, references=references,
                                    mode="recall")
    # "of" is one of "declaration of independence"; "metro station" two of four words
    assert squad_recall["individual_scores"] == pytest.approx([1 / 3, 2 / 4])
    # without the question, "metro station" counts: half the content words, so correct
    unasked = accuracy.compute(predictions=predictions[1:], references=references[1:],
                               mode="contains")
    assert unasked["match_types"] == ["contains"]


def test_contains_threshold_is_half_the_content_words(accuracy) -> None:
    predictions = ["The first UK winner was Judith Keppel, in 2000.",
                   "It was built by John Smith and Sons."]
    references = ["Judith Cynthia Aline Keppel", "Horace Lawson Hunley"]
    result = accuracy.compute(predictions=predictions, references=references, mode="contains")
    assert result["threshold"] == 0.5
    assert result["match_types"] == ["contains", "none"]  # 2 of 4 content words; 0 of 3
    strict = accuracy.compute(predictions=predictions, references=references, mode="contains",
                              threshold=1.0)
    assert strict["match_types"] == ["none", "none"] and strict["threshold"] == 1.0
    # the tie-break never moves a score across the threshold
    low = accuracy.compute(predictions=["Keppel"], references=["Judith Cynthia Aline Keppel"],
                           mode="contains")
    assert 0.0 < low["individual_scores"][0] < 0.5 and low["match_types"] == ["none"]
    assert low["scores"] == low["individual_scores"]  # graded in the QA modes


def _squad_words(rng: random.Random, n: int) -> str:
    """ASCII words with punctuation only at their ends, articles and odd spacing: the texts on
    which the QA normalisation is exactly SQuAD's."""
    vocabulary = ["the", "a", "an", "Paris", "france", "CAPITAL", "river", "seine", "of", "is",
                  "george", "Orwell", "wrote", "novel", "city", "and", "in", "old", "The"]
    words = []
    for _ in range(n):
        word = rng.choice(vocabulary)
        if rng.random() < 0.3:
            word += rng.choice(string.punctuation)
        if rng.random() < 0.1:
            word = rng.choice("([\"'") + word
        words.append(word)
    return rng.choice(["", " ", "\t"]).join([""]) + rng.choice([" ", "  ", " \n "]).join(words)


def test_squad_f1_and_exact_match_equal_torchmetrics() -> None:
    """mode="f1": per sample the official SQuAD F1 and EM (torchmetrics' port of the official
    script), maximised over the references, as torchmetrics computes them."""
    from torchmetrics.functional.text.squad import squad

    rng = random.Random(11)
    predictions, references = [], []
    for i in range(150):
        refs = [_squad_words(rng, rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
        if i % 5 == 0:
            pred = refs[0].upper() + " !"
        else:
            pred = _squad_words(rng, rng.randint(1, 12))
        predictions.append(pred)
        references.append(refs)
    metric = evaluate.load(registry.metric_path("accuracy"))
    ours = metric.compute(predictions=predictions, references=references, mode="f1",
                          return_confidence=False)
    for i, (pred, refs) in enumerate(zip(predictions, references, strict=True)):
        one = squad([{"prediction_text": pred, "id": "x"}],
                    [{"answers": {"answer_start": [0] * len(refs), "text": refs}, "id": "x"}])
        assert ours["individual_scores"][i] == pytest.approx(float(one["f1"]) / 100, abs=1e-6)
        assert (ours["match_types"][i] == "exact") == (float(one["exact_match"]) == 100.0)
    everything = squad(
        [{"prediction_text": p, "id": str(i)} for i, p in enumerate(predictions)],
        [{"answers": {"answer_start": [0] * len(r), "text": r}, "id": str(i)}
         for i, r in enumerate(references)],
    )
    assert ours["mean_score"] == pytest.approx(float(everything["f1"]) / 100, abs=1e-6)
    assert ours["exact_accuracy"] == pytest.approx(float(everything["exact_match"]) / 100,
                                                   abs=1e-6)
    assert 0 < ours["correct"] < len(predictions)
    assert ours["accuracy"] == sum(s >= 0.5 for s in ours["individual_scores"]) / 150


def test_squad_precision_and_recall(accuracy) -> None:
    """SQuAD's token precision and recall (the parts of its F1), by hand."""
    kwargs = {"predictions": ["Paris is the capital of France", "Lyon"],
              "references": [["Paris France", "capital city"], "Paris"]}
    recall = accuracy.compute(**kwargs, mode="recall")
    precision = accuracy.compute(**kwargs, mode="precision")
    # tokens: paris is capital of france (5); aliases: paris france (2), capital city (2)
    assert recall["individual_scores"] == [1.0, 0.0] and recall["best_reference"] == [0, 0]
    assert precision["individual_scores"] == [2 / 5, 0.0]
    assert precision["accuracy"] == 0.0 and recall["accuracy"] == 0.5


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"mode": "fuzzy"}, ValueError, "mode"),
        ({"mode": "f1", "threshold": 1.5}, ValueError, "threshold"),
        ({"mode": "f1", "threshold": "0.5"}, TypeError, "threshold"),
        ({"reference_separator": ""}, TypeError, "reference_separator"),
        ({"reference_separator": 3}, TypeError, "reference_separator"),
        ({"mode": "contains", "fuzzy_match": True}, ValueError, "fuzzy_match"),
        ({"mode": "recall", "case_sensitive": True}, ValueError, "mode='exact'"),
        ({"questions": ["q"]}, ValueError, "lengths"),
        ({"references": ["a", []]}, ValueError, "references[1]"),
    ],
)
def test_bad_qa_options(accuracy, kwargs: dict, error: type, needle: str) -> None:
    assert_refused(accuracy, error, needle, **kwargs)


@pytest.mark.timeout(60)
def test_fuzzy_matching_of_two_different_huge_texts_is_bounded(accuracy) -> None:
    """Two different 1 MB texts would cost rapidfuzz about half a minute; such a pair is not
    compared and is listed in fuzzy_skipped. A pair that differs in a few characters around a
    long common prefix or suffix is still compared (rapidfuzz strips them first), and a pair
    whose lengths alone rule out the threshold is decided without comparing."""
    rng = random.Random(3)
    first = "".join(rng.choices(string.ascii_lowercase + " ", k=1_000_000))
    second = "".join(rng.choices(string.ascii_lowercase + " ", k=1_000_000))
    predictions = [first, first + "x", first, "short answer", "y" + first]
    references = [second, first, first[:400_000] + "zz" + first[400_000:], second, first + "x"]
    result = accuracy.compute(predictions=predictions, references=references, fuzzy_match=True)
    # the last pair is nearly equal, but shares no prefix or suffix: too large to compare
    assert result["fuzzy_skipped"] == [0, 4]
    assert result["match_types"] == ["none", "fuzzy", "fuzzy", "none", "none"]
    expected = [fuzz.ratio(seed_form(p, False, True), seed_form(r, False, True)) / 100 >= 0.8
                for p, r in zip(predictions[1:4], references[1:4], strict=True)]
    assert expected == [True, True, False]
    contains = accuracy.compute(predictions=[first], references=[second], mode="contains")
    assert 0.0 <= contains["individual_scores"][0] <= 1.0


def test_evouna_agreement_goal() -> None:
    """The card's documented setting on the 600 human-labelled EVOUNA NQ pairs: mode="contains"
    with its default threshold, "/" aliases and the questions reaches the goal of the card:
    AUROC >= 0.95 and Cohen's kappa >= 0.80 (scikit-learn)."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    if not EVOUNA.exists():
        pytest.skip(f"{EVOUNA} not found")
    rows = [json.loads(line) for line in EVOUNA.read_text(encoding="utf-8").splitlines()]
    labels = [int(r["label"]) for r in rows]
    metric = evaluate.load(registry.metric_path("accuracy"))
    result = metric.compute(
        predictions=[r["prediction"] for r in rows], references=[r["reference"] for r in rows],
        questions=[r["question"] for r in rows], mode="contains", reference_separator="/",
    )
    assert len(rows) == 600
    assert roc_auc_score(labels, result["scores"]) >= 0.95
    decisions = [int(t != "none") for t in result["match_types"]]
    assert decisions == [int(s >= result["threshold"]) for s in result["scores"]]
    assert cohen_kappa_score(labels, decisions) >= 0.80
