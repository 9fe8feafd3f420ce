"""rouge: per-sample F-measures identical to Google's rouge_score, run here on generated corpora
(stemmer on and off, rougeLsum's newlines, several references, Unicode, texts that tokenise to
nothing), HF evaluate's interface, validation, datasets columns."""

from __future__ import annotations

import random

import evaluate
import pytest
from datasets import Dataset
from hypothesis import given
from input_checks import assert_refused
from property_checks import columns, examples, text_pairs
from rouge_score import rouge_scorer

from shared.kit import registry

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
    assert_refused(rouge, error, needle, **kwargs)


def test_datasets_columns(rouge) -> None:
    ds = Dataset.from_dict({"prediction": ["the cat", "a dog"],
                            "reference": [["the cat", "cat"], ["the dog"]]})
    result = rouge.compute(predictions=ds["prediction"], references=ds["reference"])
    assert result["rouge1"] == pytest.approx((1.0 + 0.5) / 2)


@examples(20)
@given(text_pairs(max_size=40, max_rows=6))
def test_output_ranges(rouge, pairs) -> None:
    predictions, references = columns(pairs)
    result = rouge.compute(predictions=predictions, references=references, use_aggregator=False)
    scorer = rouge_scorer.RougeScorer(TYPES)
    for i, (p, r) in enumerate(pairs):
        expected = scorer.score(r, p)
        assert result["scores"][i] == {key: expected[key].fmeasure for key in TYPES}
        assert all(0.0 <= v <= 1.0 for v in result["scores"][i].values())


def test_load_by_relative_path_from_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(registry.METRICS_DIR.parent)
    assert evaluate.load("metrics/rouge").name == "rouge"


# ------------------------------------------------------------------ long inputs (no LCS table)

def rouge_module(rouge) -> object:
    """The loaded metric script's module (its routing constants)."""
    import sys

    return sys.modules[type(rouge).__module__]


@pytest.fixture()
def long_path(rouge, monkeypatch):
    """Every pair with text on both sides takes the exact linear-memory LCS path, with rows
    recomputed from checkpoints, as a pair of long texts does."""
    from shared import lcs

    monkeypatch.setattr(rouge_module(rouge), "TABLE_CELLS", 0)
    monkeypatch.setattr(lcs, "WHOLE_TABLE_BYTES", 64)
    return rouge


def multiline_corpus(n: int, seed: int, max_words: int) -> list[str]:
    rng = random.Random(seed)
    words = "the cat sat on mat a dog ran runs running quick brown fox 1984 x y z".split()
    texts = []
    for _ in range(n):
        k = rng.randint(1, max_words)
        texts.append("".join(rng.choice(words) + rng.choice([" ", " ", " ", "\n", ". ", "\n\n"])
                             for _ in range(k)))
    return texts


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_long_path_identical_to_rouge_score(long_path, use_stemmer: bool) -> None:
    predictions = multiline_corpus(150, seed=11, max_words=80) + corpus(100, seed=12)
    references = multiline_corpus(150, seed=13, max_words=80) + corpus(100, seed=14)
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    result = long_path.compute(predictions=predictions, references=references,
                               use_stemmer=use_stemmer, use_aggregator=False)
    assert "unmeasured" not in result
    for i, (p, r) in enumerate(zip(predictions, references, strict=True)):
        expected = scorer.score(r, p)
        assert result["scores"][i] == {key: expected[key].fmeasure for key in TYPES}, i


@examples(40)
@given(text_pairs(max_size=60, max_rows=4, alphabet="ab \n"))
def test_long_path_hypothesis(long_path, pairs) -> None:
    predictions, references = columns(pairs)
    result = long_path.compute(predictions=predictions, references=references,
                               use_aggregator=False)
    scorer = rouge_scorer.RougeScorer(TYPES)
    for i, (p, r) in enumerate(pairs):
        expected = scorer.score(r, p)
        assert result["scores"][i] == {key: expected[key].fmeasure for key in TYPES}


@pytest.mark.parametrize("lines", [False, True])
def test_thousands_of_tokens(rouge, monkeypatch, lines: bool) -> None:
    """2,500 x 1,500 tokens (3.75M cells) routed as a long pair; several references, one of
    them short (the engine scores that one)."""
    from shared import lcs

    monkeypatch.setattr(rouge_module(rouge), "TABLE_CELLS", 2**20)
    monkeypatch.setattr(lcs, "WHOLE_TABLE_BYTES", 4096)
    rng = random.Random(lines)
    vocabulary = [f"w{k}" for k in range(60)]

    def text(k: int) -> str:
        sep = (lambda: rng.choice([" "] * 30 + ["\n"])) if lines else (lambda: " ")
        return "".join(rng.choice(vocabulary) + sep() for _ in range(k))

    prediction, reference = text(2500), text(1500)
    scorer = rouge_scorer.RougeScorer(TYPES)
    result = rouge.compute(predictions=[prediction], references=[[reference, "w1 w2"]],
                           use_aggregator=False)
    expected = scorer.score_multi([reference, "w1 w2"], prediction)
    assert result["scores"][0] == {key: expected[key].fmeasure for key in TYPES}


def test_beyond_the_exact_limit_is_a_named_row_error(rouge, monkeypatch) -> None:
    """A row whose LCS would exceed the limits gets None and a reason for those types only; the
    other rows and types are scored, the means are over the scored rows."""
    module = rouge_module(rouge)
    monkeypatch.setattr(module, "TABLE_CELLS", 100)
    monkeypatch.setattr(module, "MAX_LCS_CELLS", 10_000)
    big = " ".join(f"w{k % 50}" for k in range(150))
    predictions = ["the cat sat on the mat", big, "a dog"]
    references = ["the cat is on the mat", big + " extra", "a dog barked"]
    result = rouge.compute(predictions=predictions, references=references, use_aggregator=False)
    scorer = rouge_scorer.RougeScorer(TYPES)
    expected = [scorer.score(r, p) for p, r in zip(predictions, references, strict=True)]
    for i in (0, 2):
        assert result["scores"][i] == {key: expected[i][key].fmeasure for key in TYPES}
    assert result["scores"][1] == {"rouge1": expected[1]["rouge1"].fmeasure,
                                   "rouge2": expected[1]["rouge2"].fmeasure,
                                   "rougeL": None, "rougeLsum": None}
    assert [(u["index"], u["rouge_type"]) for u in result["unmeasured"]] == [
        (1, "rougeL"), (1, "rougeLsum")]
    assert all(u["reason"].startswith("LCSTooLarge: ") for u in result["unmeasured"])
    mean = rouge.compute(predictions=predictions, references=references)
    assert mean["rougeL"] == pytest.approx(
        (expected[0]["rougeL"].fmeasure + expected[2]["rougeL"].fmeasure) / 2, abs=1e-15)
    assert mean["rouge1"] == pytest.approx(
        sum(e["rouge1"].fmeasure for e in expected) / 3, abs=1e-15)

    # rougeLsum: many sentences against one long one exceed the walk limit, rougeL does not
    monkeypatch.setattr(module, "MAX_LCS_CELLS", 10**9)
    monkeypatch.setattr(module, "MAX_LSUM_STEPS", 1_000)
    many_lines = "\n".join(f"w{k % 50} w{k % 7}" for k in range(60))
    result = rouge.compute(predictions=[many_lines], references=[big],
                           rouge_types=["rougeL", "rougeLsum"], use_aggregator=False)
    assert result["rougeL"] == [scorer.score(big, many_lines)["rougeL"].fmeasure]
    assert result["rougeLsum"] == [None]
    assert "sentence-pair walk" in result["unmeasured"][0]["reason"]


MEGABYTE_PAIR = r'''
import json, random, resource, sys
import evaluate
rouge = evaluate.load(sys.argv[1])
rouge.compute(predictions=["warm up"], references=["warm up"])
rng = random.Random(0)
words = [f"{stem}{suffix}" for stem in ("report", "market", "govern", "develop", "nation",
         "research", "climat", "energ", "polic", "econom", "health", "water", "court")
         for suffix in ("", "s", "ed", "ing", "er", "al")] + "the a of in to and on".split()
def text():
    return " ".join(rng.choice(words) for _ in range(170_000))[:1_000_000]
a, b = text(), text()
vm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize")][0]
ceiling = vm * 1024 + 2 * 2**30  # what the process holds now + 2 GiB
resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = rouge.compute(predictions=[a, "short text"], references=[b, "short"],
                       use_aggregator=False)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"scores": result["scores"], "unmeasured": result.get("unmeasured"),
                  "peak_growth_kib": after - before, "a": a[:200], "b": b[:200]}))
'''


def test_megabyte_pair_in_bounded_memory(tmp_path) -> None:
    """Two different ~1 MB single-line texts (~170k tokens each): the engine alone would
    allocate a 54 GB table and abort the process. Scored in a subprocess limited to its own
    size + 2 GiB of address space; every type computed; rouge1 equals rouge_score's."""
    import json
    import subprocess
    import sys

    script = tmp_path / "pair.py"
    script.write_text(MEGABYTE_PAIR)
    done = subprocess.run([sys.executable, str(script), registry.metric_path("rouge")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["unmeasured"] is None
    long_pair = report["scores"][0]
    assert set(long_pair) == set(TYPES)
    assert all(0.0 < long_pair[key] < 1.0 for key in TYPES), long_pair
    # one sentence each: rougeLsum's union LCS is one LCS
    assert long_pair["rougeL"] == long_pair["rougeLsum"]
    assert report["peak_growth_kib"] < 2 * 2**20
    short = rouge_scorer.RougeScorer(TYPES).score("short", "short text")
    assert report["scores"][1] == {key: short[key].fmeasure for key in TYPES}


ENGINE_THREADS = '''
import json, os, sys
import evaluate
rouge = evaluate.load(sys.argv[1])
def threads():
    return len(os.listdir("/proc/self/task"))
before = threads()
rouge.compute(predictions=["a b c d"] * 64, references=["a b d e"] * 64)
print(json.dumps({"variable": os.environ.get("RAYON_NUM_THREADS"),
                  "new_threads": threads() - before, "cores": len(os.sched_getaffinity(0))}))
'''


@pytest.mark.parametrize("user_value", [None, "1"])
def test_engine_pool_has_a_spare_thread_unless_the_user_chose(tmp_path, user_value) -> None:
    """The engine's rayon pool is built at its first batch, in a fresh process: with
    ``RAYON_NUM_THREADS`` unset it gets one thread more than the process's cores (the measured
    reason is in ``_spare_engine_thread``); a user's own value is left as it is and obeyed."""
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "threads.py"
    script.write_text(ENGINE_THREADS)
    env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
    if user_value is not None:
        env["RAYON_NUM_THREADS"] = user_value
    done = subprocess.run([sys.executable, str(script), registry.metric_path("rouge")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    expected = report["cores"] + 1 if user_value is None else int(user_value)
    assert report["variable"] == str(expected)
    assert report["new_threads"] == expected
