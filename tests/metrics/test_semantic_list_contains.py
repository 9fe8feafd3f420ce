"""semantic_list_contains: the seed's example as a golden test, Future AGI's algorithm run here
with sentence-transformers on more cases, one batched encode per call, validation, odd inputs."""

from __future__ import annotations

import json
import string

import evaluate
import numpy as np
import pytest
from datasets import Dataset
from hypothesis import given
from hypothesis import strategies as st
from input_checks import assert_refused
from property_checks import examples
from scipy.spatial.distance import cosine

from shared import defaults, load_embedding_model
from shared.kit import registry

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RESPONSE = "The quick brown fox jumps over the lazy dog."
PHRASES = ["brown fox", "lazy dog", "dancing giraffe"]
SEED_SIMILARITIES = {  # from the seed document
    "brown fox": 0.6240062713623047,
    "lazy dog": 0.5937517639250626,
    "dancing giraffe": 0.28756572530065383,
}


@pytest.fixture(scope="module")
def slc() -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path("semantic_list_contains"))


@pytest.mark.parametrize("references", [[PHRASES], [json.dumps(PHRASES)]])
def test_seed_example(slc, references) -> None:
    result = slc.compute(predictions=[RESPONSE], references=references, similarity_threshold=0.6)
    assert result["score"] == 1.0 and result["scores"] == [1.0]
    detail = result["details"][0]
    assert list(detail["similarities"]) == PHRASES
    for phrase, value in SEED_SIMILARITIES.items():
        assert detail["similarities"][phrase] == pytest.approx(value, abs=1e-6)
    assert detail["matches"] == [True, False, False]
    assert detail["threshold"] == 0.6 and detail["match_all"] is False


def test_defaults_and_match_all(slc) -> None:
    default = slc.compute(predictions=[RESPONSE], references=[PHRASES])  # threshold 0.7
    assert default["scores"] == [0.0] and default["details"][0]["threshold"] == 0.7
    every = slc.compute(predictions=[RESPONSE, RESPONSE], references=[PHRASES, PHRASES[:2]],
                        similarity_threshold=0.55, match_all=True)
    assert every["scores"] == [0.0, 1.0] and every["score"] == 0.5


def test_empty_response_and_no_phrases(slc) -> None:
    result = slc.compute(predictions=["", "  ", RESPONSE, RESPONSE],
                         references=[PHRASES, PHRASES, [], "[]"])
    assert result["scores"] == [0.0, 0.0, 0.0, 0.0]
    reasons = [d.get("reason") for d in result["details"]]
    assert reasons == ["Empty response", "Empty response", "No expected phrases to match",
                       "No expected phrases to match"]


def future_agi(response: str, phrases: list[str], threshold: float, match_all: bool,
               model) -> tuple[float, dict[str, float], list[bool]]:
    """Future AGI's SemanticListContains, case by case, as its package computes it."""
    def prep(value: str) -> str:
        return value.lower().translate(str.maketrans("", "", string.punctuation)).strip()

    response_vector = model.encode(prep(response))
    phrase_vectors = model.encode([prep(p) for p in phrases])
    similarities = {
        p: 1.0 - cosine(response_vector, v) for p, v in zip(phrases, phrase_vectors, strict=True)
    }
    matches = [similarities[p] >= threshold for p in phrases]
    return (1.0 if (all(matches) if match_all else any(matches)) else 0.0), similarities, matches


def test_matches_future_agi_case_by_case(slc) -> None:
    model = load_embedding_model()
    cases = [
        ("Paris is the capital of France.", ["capital of France", "Berlin", "Eiffel tower"]),
        ("I love eating apples and bananas!", ["fruit", "vegetables", "apples"]),
        ("The meeting was moved to Tuesday.", "schedule change"),
        ("Water boils at 100 degrees Celsius.", ["boiling point", "freezing", "water"]),
        ("   Cats,   dogs & birds   ", ["pets", "animals", "CATS"]),
    ]
    predictions = [c[0] for c in cases]
    references = [c[1] for c in cases]
    for threshold, match_all in [(0.45, False), (0.3, True)]:
        result = slc.compute(predictions=predictions, references=references,
                             similarity_threshold=threshold, match_all=match_all)
        for i, (response, phrases) in enumerate(cases):
            phrases = [phrases] if isinstance(phrases, str) else phrases
            score, sims, matches = future_agi(response, phrases, threshold, match_all, model)
            detail = result["details"][i]
            assert list(detail["similarities"]) == phrases
            assert np.allclose(list(detail["similarities"].values()), list(sims.values()),
                               atol=1e-5)
            assert detail["matches"] == matches and result["scores"][i] == score


def test_one_batched_encode_of_distinct_texts(slc, monkeypatch) -> None:
    model = load_embedding_model()
    calls: list[list[str]] = []
    encode = model.encode

    def counting(texts, **kwargs):
        calls.append(list(texts))
        return encode(texts, **kwargs)

    monkeypatch.setattr(model, "encode", counting)
    slc.compute(predictions=["A cat.", "a cat", "A dog!"],
                references=[["cat", "Dog"], ["cat"], ["dog", "cat"]])
    assert len(calls) == 1
    assert sorted(calls[0]) == ["a cat", "a dog", "cat", "dog"]


def test_options_and_local_folder(slc) -> None:
    raw = slc.compute(predictions=["THE FOX!"], references=[["the fox"]],
                      case_insensitive=False, remove_punctuation=False,
                      embedding_model=str(defaults.embedding_model_dir()))
    cleaned = slc.compute(predictions=["THE FOX!"], references=[["the fox"]])
    assert cleaned["details"][0]["similarities"]["the fox"] == pytest.approx(1.0, abs=1e-5)
    assert raw["details"][0]["similarities"]["the fox"] < 0.999


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"similarity_threshold": 1.2}, ValueError, "similarity_threshold"),
        ({"similarity_threshold": float("nan")}, ValueError, "similarity_threshold"),
        ({"predictions": ["a", None]}, ValueError, "predictions[1]"),
        ({"references": [["x"], 5]}, TypeError, "references[1]"),
        ({"references": [["x"], ["y", None]]}, ValueError, "references[1][1]"),
        ({"match_all": "no"}, TypeError, "match_all"),
        ({"embedding_model": 5}, TypeError, "embedding_model"),
    ],
)
def test_bad_input(slc, kwargs: dict, error: type, needle: str) -> None:
    assert_refused(slc, error, needle, **{"references": [["x"], ["y"]], **kwargs})


def test_huge_and_unusual_strings(slc) -> None:
    big = "the quick brown fox " * 50_000  # 1 MB; the model reads its first 256 word pieces
    result = slc.compute(
        predictions=[big, "😀 \u202eمرحبا\x00 e\u0301", "!!!"],
        references=[["quick fox"], ["שלום", "😀", ""], ["?"]],
        similarity_threshold=0.5,
    )
    assert result["scores"][0] == 1.0
    assert all(-1.0 <= v <= 1.0 + 1e-6 for d in result["details"]
               for v in d["similarities"].values())


def test_datasets_columns(slc) -> None:
    ds = Dataset.from_dict({"prediction": [RESPONSE], "expected": [PHRASES]})
    result = slc.compute(predictions=ds["prediction"], references=ds["expected"],
                         similarity_threshold=0.6)
    assert result["scores"] == [1.0]


@examples(8)
@given(st.lists(st.tuples(st.text(max_size=30), st.lists(st.text(max_size=15), max_size=3)),
                min_size=1, max_size=4), st.floats(0, 1), st.booleans())
def test_output_ranges(slc, samples, threshold: float, match_all: bool) -> None:
    predictions = [s[0] for s in samples]
    references = [s[1] for s in samples]
    result = slc.compute(predictions=predictions, references=references,
                         similarity_threshold=threshold, match_all=match_all)
    assert set(result["scores"]) <= {0.0, 1.0}
    assert 0.0 <= result["score"] <= 1.0
    for detail, phrases in zip(result["details"], references, strict=True):
        assert len(detail["matches"]) in (0, len(phrases))


def test_load_by_relative_path_from_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(registry.METRICS_DIR.parent)
    assert evaluate.load("metrics/semantic_list_contains").name == "semantic_list_contains"


# ------------------------------------------------------------- texts longer than the model's window

COOKING = [
    "Whisk the eggs with a pinch of salt before adding the flour.",
    "Let the dough rest for thirty minutes in a warm kitchen.",
    "Roast the peppers until their skins blister and blacken.",
    "A splash of vinegar brightens a heavy tomato sauce.",
    "Simmer the stock slowly so that it stays clear.",
    "Fold the butter into the pastry and chill it again.",
    "Toast the cumin seeds in a dry pan until fragrant.",
    "Slice the onions thinly and cook them until golden.",
]
SPACE = [
    "The probe entered orbit around the gas giant after a long cruise.",
    "Astronomers measured the spectrum of the distant quasar.",
    "The rocket's second stage separated high above the ocean.",
    "A solar flare disturbed radio signals across the hemisphere.",
    "The telescope's mirror was polished to a fraction of a wavelength.",
    "Cosmic rays collided with the upper atmosphere all night.",
]


def paragraph(sentences: list[str], words: int, offset: int = 0) -> str:
    out, count, k = [], 0, offset
    while count < words:
        sentence = sentences[k % len(sentences)]
        out.append(sentence)
        count += len(sentence.split())
        k += 1
    return " ".join(out)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 - cosine(a, b)


def test_phrase_beyond_the_first_window_is_found(slc) -> None:
    """The response talks about cooking for ~900 word pieces, then mentions the phrase: the model
    alone reads only the cooking (its first 256 pieces); the windows find the phrase, about as
    similar as in a response of one window's length that ends with it (the same reading as for
    a short response)."""
    model = load_embedding_model()
    needle = "The Eiffel Tower stands in Paris, the capital of France."
    response = paragraph(COOKING, 700) + " " + needle
    one_window = paragraph(COOKING, 150) + " " + needle  # < 256 word pieces
    phrase = "eiffel tower in paris"
    result = slc.compute(predictions=[response, one_window, "Paris has the Eiffel Tower."],
                         references=[[phrase]] * 3, similarity_threshold=0.35)
    detail = result["details"][0]
    assert detail["windows"]["response"] > 2 and detail["windows"]["phrases"] == [1]
    assert detail["cut"] is False
    prep = str.maketrans("", "", string.punctuation)
    truncated = cos(model.encode(response.lower().translate(prep)), model.encode(phrase))
    found = detail["similarities"][phrase]
    alone = result["details"][1]["similarities"][phrase]
    assert truncated < 0.1 and found > truncated + 0.25, (truncated, found)
    assert abs(found - alone) < 0.1, (found, alone)
    assert result["scores"] == [1.0, 1.0, 1.0]
    assert "windows" not in result["details"][1] and "windows" not in result["details"][2]


def test_long_phrase_must_be_contained_window_by_window(slc) -> None:
    """A phrase longer than the window: every window of it must be similar to some window of the
    response. The same long text is contained in a response that embeds it; a phrase that adds a
    long second topic is not, although its first window is identical (the model alone, reading
    only the first 256 pieces, would say 1.0)."""
    model = load_embedding_model()
    cooking = paragraph(COOKING, 400)
    response = paragraph(SPACE, 60) + " " + cooking
    mixed = cooking + " " + paragraph(SPACE, 400, offset=3)
    result = slc.compute(predictions=[response, response], references=[[cooking], [mixed]],
                         similarity_threshold=0.8)
    contained, mixed_detail = result["details"]
    assert contained["windows"]["phrases"][0] > 1 and mixed_detail["windows"]["phrases"][0] > 1
    assert contained["similarities"][cooking] > 0.9
    truncated = cos(model.encode(mixed.lower()), model.encode(cooking.lower()))
    assert truncated > 0.99  # what cutting both texts at the model's window says
    assert mixed_detail["similarities"][mixed] < 0.8
    assert result["scores"] == [1.0, 0.0]


def test_two_different_megabyte_texts(slc) -> None:
    """Two 1 MB texts that share their first ~300 words and then differ (cooking vs space): not
    1.0 (cutting both to the model's window gave 1.0), read up to MAX_WINDOWS windows each, and
    the details say they were cut."""
    from shared.kit import embeddings

    common = paragraph(COOKING, 300)
    a = (common + " " + paragraph(COOKING, 200_000, offset=5))[:1_000_000]
    b = (common + " " + paragraph(SPACE, 200_000))[:1_000_000]
    result = slc.compute(predictions=[a], references=[[b]])
    detail = result["details"][0]
    assert detail["cut"] is True
    assert detail["windows"] == {"response": embeddings.MAX_WINDOWS,
                                 "phrases": [embeddings.MAX_WINDOWS]}
    assert detail["similarities"][b] < 0.7 and result["scores"] == [0.0]
