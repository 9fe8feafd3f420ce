"""rouge: per-sample F-measures identical to Google's rouge_score, run here on generated corpora
(stemmer on and off, rougeLsum's newlines, several references, Unicode, texts that tokenise to
nothing), HF evaluate's interface, validation, datasets columns."""

from __future__ import annotations

import random

import evaluate
import pytest
from datasets import Dataset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from shared import registry

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
WORDS = (
    "running runs ran easily fairly generalization generalizations oscillators conditional "
    "national rational relational hopefulness goodness formality sensitivity electrical "
    "adjustable replacement adjustment dependent adoption homologous activate effective "
    "bowdlerize caresses ponies ties caress cats feed agreed plastered bled motoring sing "
    "conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky "
    "the a of and to in is was quick brown fox jumps over lazy dog 1984 3.14 café naïve ﬁnance "
    "straße İstanbul KELVIN \u212a Ω ½ ² 日本語 привет مرحبا e\u0301 x\x00y 😀 ' - . , ! ?"
).split(" ") + ["\n", "\n\n", " \n ", "\t"]


def corpus(n: int, seed: int, max_words: int = 30) -> list[str]:
    """Texts of random words; never blank (blank references are rejected as input errors)."""
    rng = random.Random(seed)
    lengths = [rng.randint(1, max_words) for _ in range(n)]
    texts = (" ".join(rng.choice(WORDS) for _ in range(k)) for k in lengths)
    return [t if t.strip() else t + "?" for t in texts]


@pytest.fixture(scope="module")
def rouge() -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path("rouge"))


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_identical_to_rouge_score(rouge, use_stemmer: bool) -> None:
    predictions = corpus(800, seed=1) + ["!!!", "日本語", "\n", "KKK", "a"]
    references = corpus(800, seed=2) + ["a", "日本語", "x\ny", "kkk", "?!"]
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    expected = [scorer.score(r, p) for p, r in zip(predictions, references, strict=True)]
    result = rouge.compute(predictions=predictions, references=references,
                           use_stemmer=use_stemmer, use_aggregator=False)
    for key in TYPES:
        assert result[key] == [e[key].fmeasure for e in expected], key
    assert result["scores"][7] == {key: expected[7][key].fmeasure for key in TYPES}
    aggregated = rouge.compute(predictions=predictions, references=references,
                               use_stemmer=use_stemmer)
    for key in TYPES:
        assert aggregated[key] == pytest.approx(sum(result[key]) / len(predictions), abs=1e-12)


def test_several_references_is_score_multi(rouge) -> None:
    rng = random.Random(3)
    predictions = corpus(250, seed=4)
    pool = corpus(1000, seed=5)
    references = [rng.sample(pool, rng.randint(1, 4)) for _ in predictions]
    references[0] = references[0][0]  # a plain string among lists
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=True)
    result = rouge.compute(predictions=predictions, references=references, use_stemmer=True,
                           use_aggregator=False)
    for i, (p, refs) in enumerate(zip(predictions, references, strict=True)):
        refs = [refs] if isinstance(refs, str) else refs
        best = scorer.score_multi(refs, p)
        assert result["scores"][i] == {key: best[key].fmeasure for key in TYPES}


def test_rouge_lsum_splits_on_newlines(rouge) -> None:
    prediction = "the cat sat\non the mat today"
    reference = "on the mat today\nthe cat sat"
    scorer = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"])
    expected = scorer.score(reference, prediction)
    result = rouge.compute(predictions=[prediction], references=[reference],
                           rouge_types=["rougeL", "rougeLsum"])
    assert result["rougeL"] == expected["rougeL"].fmeasure
    assert result["rougeLsum"] == expected["rougeLsum"].fmeasure
    assert result["rougeLsum"] > result["rougeL"]
    assert set(result) == {"rougeL", "rougeLsum", "scores"}


def test_other_types_and_custom_tokenizer(rouge) -> None:
    predictions, references = corpus(200, seed=6), corpus(200, seed=7)
    types = ["rouge3", "rouge9", "rougeL"]
    expected = rouge_scorer.RougeScorer(types)
    result = rouge.compute(predictions=predictions, references=references, rouge_types=types,
                           use_aggregator=False)
    for key in types:
        assert result[key] == [expected.score(r, p)[key].fmeasure
                               for p, r in zip(predictions, references, strict=True)]

    class Whitespace:
        def tokenize(self, text: str) -> list[str]:
            return text.split()

    custom = rouge_scorer.RougeScorer(TYPES, tokenizer=Whitespace())
    for tokenizer in (Whitespace(), str.split):
        result = rouge.compute(predictions=predictions, references=references,
                               tokenizer=tokenizer, use_aggregator=False)
        for key in TYPES:
            assert result[key] == [custom.score(r, p)[key].fmeasure
                                   for p, r in zip(predictions, references, strict=True)]


def test_hf_example(rouge) -> None:
    result = rouge.compute(predictions=["hello there", "general kenobi"],
                           references=["hello there", "general kenobi"])
    assert {k: result[k] for k in TYPES} == dict.fromkeys(TYPES, 1.0)


def test_huge_and_unusual_strings(rouge) -> None:
    big = "alpha beta gamma " * 70_000  # ~1.2 MB
    predictions = [big, "😀\u202eمرحبا\x00", "", "e\u0301"]
    references = [big + "delta", "😀", "nothing", ["é", "e"]]
    result = rouge.compute(predictions=predictions, references=references,
                           rouge_types=["rouge1", "rouge2"], use_aggregator=False)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2"])
    assert result["rouge1"][0] == scorer.score(references[0], big)["rouge1"].fmeasure
    assert result["rouge1"][1:3] == [0.0, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"references": ["a", None]}, ValueError, "references[1]"),
        ({"references": ["a", ["b", 2]]}, TypeError, "references[1][1]"),
        ({"references": ["a", []]}, ValueError, "references[1]"),
        ({"predictions": [None, "b"]}, ValueError, "predictions[0]"),
        ({"rouge_types": ["rouge1", "rougeX"]}, ValueError, "rouge_types[1]"),
        ({"rouge_types": []}, ValueError, "rouge_types"),
        ({"use_stemmer": 1}, TypeError, "use_stemmer"),
        ({"tokenizer": 3}, TypeError, "tokenizer"),
    ],
)
def test_bad_input(rouge, kwargs: dict, error: type, needle: str) -> None:
    inputs = {"predictions": ["a", "b"], "references": ["a", "c"], **kwargs}
    with pytest.raises(error) as info:
        rouge.compute(**inputs)
    assert needle in str(info.value)


def test_datasets_columns(rouge) -> None:
    ds = Dataset.from_dict({"prediction": ["the cat", "a dog"],
                            "reference": [["the cat", "cat"], ["the dog"]]})
    result = rouge.compute(predictions=ds["prediction"], references=ds["reference"])
    assert result["rouge1"] == pytest.approx((1.0 + 0.5) / 2)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.text(max_size=40), st.text(min_size=1, max_size=40).filter(str.strip)),
        min_size=1, max_size=6,
    )
)
def test_output_ranges(rouge, pairs) -> None:
    predictions, references = map(list, zip(*pairs, strict=True))
    result = rouge.compute(predictions=predictions, references=references, use_aggregator=False)
    scorer = rouge_scorer.RougeScorer(TYPES)
    for i, (p, r) in enumerate(pairs):
        expected = scorer.score(r, p)
        assert result["scores"][i] == {key: expected[key].fmeasure for key in TYPES}
        assert all(0.0 <= v <= 1.0 for v in result["scores"][i].values())


def test_load_by_relative_path_from_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(registry.METRICS_DIR.parent)
    assert evaluate.load("metrics/rouge").name == "rouge"
