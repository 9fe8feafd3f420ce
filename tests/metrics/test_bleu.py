"""bleu: Valor's definition, with per-sample values and corpus BLEU identical to nltk's run here
on generated corpora (several references, other weights, smoothing), validation, odd inputs."""

from __future__ import annotations

import random
import warnings

import evaluate
import pytest
from datasets import Dataset
from hypothesis import given, settings
from hypothesis import strategies as st
from input_checks import assert_refused
from nltk.tokenize import RegexpTokenizer
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from property_checks import columns, examples, text_pairs

from shared.kit import registry
from shared.kit.algorithms.bleu import ngrams, tokens

TOKENIZER = RegexpTokenizer(r"\w+|\$[\d]+|[^\s\.]+")  # Valor's
WORDS = (
    "the a cat dog sat on mat is was big small red blue quick brown fox jumps over lazy . , ; "
    "$5 $10 $ 3.5 don't e.g. U.S.A. 日本 😀 e\u0301 مرحبا \x1c ! ?"
).split(" ")


def valor_bleu(prediction: str, references: list[str], weights=(0.25,) * 4, smoothing=None):
    """Valor's compute_sentence_bleu, written against nltk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = float(sentence_bleu([TOKENIZER.tokenize(r) for r in references],
                                    TOKENIZER.tokenize(prediction), weights=weights,
                                    smoothing_function=smoothing))
    return score if score >= 1e-9 else 0.0


def nltk_corpus(predictions, references, weights=(0.25,) * 4, smoothing=None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(corpus_bleu([[TOKENIZER.tokenize(r) for r in refs] for refs in references],
                                 [TOKENIZER.tokenize(p) for p in predictions], weights=weights,
                                 smoothing_function=smoothing))


def assert_as_nltk(bleu, predictions: list[str], references: list[list[str]],
                   weights: tuple | None = None, smoothing: str | None = None) -> dict:
    """``bleu`` on the rows: each sample's score Valor's and the corpus BLEU nltk's, with the
    same weights (none given: the defaults of both) and smoothing (the name of a
    SmoothingFunction method). Returns the result, for further checks."""
    ours: dict = {}
    theirs: dict = {}
    if weights is not None:
        ours["weights"], theirs["weights"] = list(weights), weights
    if smoothing is not None:
        ours["smoothing"], theirs["smoothing"] = smoothing, getattr(SmoothingFunction(), smoothing)
    result = bleu.compute(predictions=predictions, references=references, **ours)
    assert result["scores"] == [valor_bleu(p, refs, **theirs)
                                for p, refs in zip(predictions, references, strict=True)]
    assert result["corpus_bleu"] == nltk_corpus(predictions, references, **theirs)
    return result


def corpus(n: int, seed: int, multi: bool) -> tuple[list[str], list[list[str]]]:
    """Predictions that share words with their references, so all n-gram orders occur."""
    rng = random.Random(seed)
    predictions, references = [], []
    for _ in range(n):
        base = [rng.choice(WORDS) for _ in range(rng.randint(0, 25))]
        refs = []
        for _ in range(rng.choice([1, 2, 3]) if multi else 1):
            ref = list(base)
            for _ in range(rng.randint(0, 5)):
                ref.insert(rng.randint(0, len(ref)), rng.choice(WORDS))
            refs.append(" ".join(ref) + " end")
        predictions.append(" ".join(base))
        references.append(refs)
    return predictions, references


@pytest.fixture(scope="module")
def bleu() -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path("bleu"))


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize(
    "weights", [(0.25, 0.25, 0.25, 0.25), (0.5, 0.5), (1.0,), (0.1, 0.2, 0.3, 0.2, 0.2), (0, 1)]
)
def test_identical_to_nltk(bleu, multi: bool, weights: tuple) -> None:
    predictions, references = corpus(400, seed=len(weights) + multi, multi=multi)
    result = assert_as_nltk(bleu, predictions, references, weights)
    scores = result["scores"]
    assert 0 < sum(s == 0.0 for s in scores) < len(scores)  # both regimes are exercised
    assert result["bleu"] == pytest.approx(sum(scores) / len(scores), abs=1e-15)


@pytest.mark.parametrize("method", ["method1", "method2", "method3", "method4", "method7"])
def test_smoothing_is_nltks(bleu, method: str) -> None:
    predictions, references = corpus(60, seed=9, multi=True)
    assert_as_nltk(bleu, predictions, references, smoothing=method)


def test_simple_cases(bleu) -> None:
    result = bleu.compute(predictions=["the cat sat on the mat.", "", "..."],
                          references=["The cat sat on the mat", "a b c d", ["x y z w"]])
    assert result["scores"][1:] == [0.0, 0.0]
    # "the" vs "The": case matters, so 4-gram precision is 2/3 and so on, as nltk computes it
    assert result["scores"][0] == valor_bleu("the cat sat on the mat.", ["The cat sat on the mat"])
    perfect = bleu.compute(predictions=["It costs $5. Really."], references=["It costs $5 Really"])
    assert perfect["bleu"] == 1.0 and perfect["corpus_bleu"] == 1.0  # periods are ignored


def test_below_floor_is_zero(bleu) -> None:
    prediction, reference = "a b c d e", "a x y z w"  # unigram overlap only
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = sentence_bleu([reference.split()], prediction.split())
    assert 0 < raw < 1e-9
    assert bleu.compute(predictions=[prediction], references=[reference])["scores"] == [0.0]


def test_no_nltk_warnings(bleu) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bleu.compute(predictions=["a b c", "x"], references=["a b d", "y"])
        bleu.compute(predictions=["a b c", "x"], references=["a b d", "y"], smoothing="method1")


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"references": ["a", None]}, ValueError, "references[1]"),
        ({"references": ["a", ["b", 5]]}, TypeError, "references[1][1]"),
        ({"predictions": ["a", 1.5]}, TypeError, "predictions[1]"),
        ({"weights": [0.5, -0.5]}, ValueError, "weights[1]"),
        ({"weights": [0.5, float("nan")]}, TypeError, "weights[1]"),
        ({"weights": []}, ValueError, "weights"),
        ({"weights": [0, 0]}, ValueError, "weights"),
        ({"weights": "0.25"}, TypeError, "weights"),
        ({"smoothing": "method9"}, ValueError, "smoothing"),
    ],
)
def test_bad_input(bleu, kwargs: dict, error: type, needle: str) -> None:
    assert_refused(bleu, error, needle, **kwargs)


def test_huge_and_unusual_strings(bleu) -> None:
    big = "one two three four " * 55_000  # ~1 MB
    predictions = [big, "😀 \u202eمرحبا\x00 e\u0301", "\x00"]
    references = [big, ["😀 مرحبا e\u0301", "x"], "\x00"]
    result = bleu.compute(predictions=predictions, references=references)
    assert result["scores"][0] == 1.0
    assert result["scores"][1:] == [valor_bleu(predictions[1], references[1]),
                                    valor_bleu(predictions[2], [references[2]])]


def test_datasets_columns(bleu) -> None:
    ds = Dataset.from_dict({"prediction": ["the cat sat on the mat"],
                            "reference": [["the cat sat on the mat", "a cat"]]})
    assert bleu.compute(predictions=ds["prediction"], references=ds["reference"])["bleu"] == 1.0


@examples(25)
@given(text_pairs(max_size=40, max_rows=6))
def test_output_ranges(bleu, pairs) -> None:
    predictions, references = columns(pairs)
    result = bleu.compute(predictions=predictions, references=references)
    assert result["scores"] == [valor_bleu(p, [r]) for p, r in pairs]
    assert all(0.0 <= s <= 1.0 for s in result["scores"])
    assert 0.0 <= result["bleu"] <= 1.0 and 0.0 <= result["corpus_bleu"] <= 1.0


def test_identical_to_nltk_with_a_large_vocabulary(bleu) -> None:
    """Tens of thousands of distinct tokens: the n-gram ids are re-numbered to stay in int64."""
    rng = random.Random(11)
    predictions, references = [], []
    for _ in range(1500):
        base = [f"w{rng.randrange(200_000)}" for _ in range(rng.randint(4, 30))]
        refs = []
        for _ in range(rng.randint(1, 3)):
            ref = [w if rng.random() < 0.8 else f"w{rng.randrange(200_000)}" for w in base]
            refs.append(" ".join(ref))
        predictions.append(" ".join(base))
        references.append(refs)
    assert_as_nltk(bleu, predictions, references)


def test_load_by_relative_path_from_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(registry.METRICS_DIR.parent)
    assert evaluate.load("metrics/bleu").name == "bleu"


def test_two_different_megabyte_texts_linear(bleu) -> None:
    """Two different ~1 MB texts (~170k tokens each, 4-grams shared and not): n-gram counting,
    no pairwise table. Equal to nltk's; the memory the call allocates (tracemalloc, numpy's
    arrays included) stays a small multiple of the input, far below a len x len table."""
    import tracemalloc

    rng = random.Random(7)
    vocabulary = [f"w{k}" for k in range(300)] + ["$5", "e.g.", "don't"]

    def text() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(170_000))[:1_000_000]

    prediction, reference = text(), text()
    tracemalloc.start()
    try:
        result = bleu.compute(predictions=[prediction], references=[reference])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["scores"] == [valor_bleu(prediction, [reference])]
    assert 0.0 < result["scores"][0] < 1.0
    assert peak < 200 * 2**20, peak  # ~65 MiB; a 170k x 170k table of bytes would be 29 GB


# The engine: tokens found with array operations over character classes read off the tokenizer,
# n-grams counted in sorted rows of samples. Its edge cases, each against nltk run here.

def assert_same_identity(words: list[str], ids: list[int]) -> None:
    """Equal ids exactly for equal tokens."""
    assert len(set(zip(words, ids, strict=True))) == len(set(words)) == len(set(ids))


TRICKY = [
    "", "   ", "...", ".", "$", "$$", "$5", "$$5", "$5$", "5$5", "$5abc", "a$5b", "$x", "x$",
    ",abc", "abc,def", "abc,", "don't", "e.g.", "U.S.A.", "$\u0663\u0664x", "\u0663$\u0664",
    "a\u00a0b", "a\x1cb", "a\x00b", "\x00", "a\u2028b", "\uff15$\uff15", "_$_", "e\u0301$5",
    "日本語 $5 日本", "😀😀 😀", "a_b-c", "x" * 40, "$" + "9" * 30 + "z" * 20, "ab$12.5cd",
]


def test_tokens_are_the_tokenizers() -> None:
    texts = [*TRICKY, " ".join(TRICKY), "\n".join(TRICKY)]
    ids, counts = tokens.token_ids(texts)
    expected = [TOKENIZER.tokenize(t) for t in texts]
    assert counts.tolist() == [len(words) for words in expected]
    assert_same_identity([token for words in expected for token in words], ids.tolist())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.one_of(
    st.sampled_from(list("ab5_$.,' \n\t\x00\x1c\u0301\u0663\u00a0\u2028日😀")),
    st.characters()), max_size=30), min_size=1, max_size=8))
def test_tokens_are_the_tokenizers_on_any_text(texts) -> None:
    ids, counts = tokens.token_ids(texts)
    expected = [TOKENIZER.tokenize(t) for t in texts]
    assert counts.tolist() == [len(words) for words in expected]
    assert_same_identity([token for words in expected for token in words], ids.tolist())


@pytest.mark.parametrize("weights", [(0.25,) * 4, (1 / 8,) * 8, (1.0,)])
def test_edge_cases_identical_to_nltk(bleu, weights) -> None:
    """Empty predictions, texts shorter than the n-gram order, repeated tokens, unicode and up
    to five references (some without tokens), each sample as nltk scores it."""
    rng = random.Random(5)
    predictions = ["", "...", "the", "the the the the the the", "a a a b a a", "a b", *TRICKY]
    references = [["a b c"], ["x y"], ["the"], ["the the", "the the the", "."],
                  ["a a b a a a a", "b a a"], ["a b", "a", "b a b"]]
    usable = [t for t in TRICKY if t.strip()]  # a reference may not be blank
    for _ in TRICKY:
        references.append(rng.sample(usable, rng.randint(1, 5)))
    assert_as_nltk(bleu, predictions, references, weights)


def test_rows_of_many_lengths_and_repeats(bleu) -> None:
    """Samples from 0 to ~300 tokens (many width classes), heavy repeats, 1-4 references."""
    rng = random.Random(3)
    predictions, references = [], []
    for _ in range(300):
        words = rng.choice([["a", "b"], ["a", "b", "c", "d", "e"], [f"w{k}" for k in range(50)]])
        n = int(rng.expovariate(1 / 40))
        base = [rng.choice(words) for _ in range(n)]
        refs = [" ".join(w if rng.random() < 0.8 else rng.choice(words) for w in base) + " ."
                for _ in range(rng.randint(1, 4))]  # "." : a reference may not be blank
        predictions.append(" ".join(base))
        references.append(refs)
    assert_as_nltk(bleu, predictions, references)


def test_very_long_samples_counted_by_counter(bleu, monkeypatch) -> None:
    """Rows wider than the engine's limit take the Counter path, with the same numbers."""
    monkeypatch.setattr(ngrams, "MAX_ROW", 16)
    predictions, references = corpus(80, seed=4, multi=True)
    assert_as_nltk(bleu, predictions, references)


def test_regex_fallback(bleu, monkeypatch) -> None:
    """A character outside the engine's model of the pattern: the tokenizer itself tokenises."""
    def unsupported(texts):
        raise tokens.Unsupported("?")

    monkeypatch.setattr(ngrams, "token_ids", unsupported)
    predictions, references = corpus(60, seed=8, multi=True)
    assert_as_nltk(bleu, predictions, references)


@pytest.mark.parametrize("bits", [50, 55])
def test_row_counts_do_not_depend_on_the_token_ids(bits: int) -> None:
    """The same rows with small token ids and with ids near 2**50 (the n-gram codes are
    renumbered by rank in their rows instead of growing past 64 bits) or 2**55 (the tokens
    themselves too): the same clipped counts."""
    import numpy as np

    rng = np.random.default_rng(0)
    n_rows, w = 40, 48
    small = rng.integers(0, 6, size=(n_rows, w)).astype(np.uint64)
    small[:, 30:] = 9  # padding: the largest token, at least max_n cells
    slot = np.zeros((n_rows, w), dtype=np.uint64)
    slot[:, 12:30] = 1
    small[:, 11] = 6  # separators: vocabulary + slot
    small[:, 29] = 7
    big = small + np.uint64(2**bits)
    expected = ngrams.row_numerators(small, slot, 6, 4, 1)
    assert expected[:, 0].sum() > 0 and expected[:, 3].sum() > 0
    np.testing.assert_array_equal(ngrams.row_numerators(big, slot, 6, bits + 1, 1), expected)
