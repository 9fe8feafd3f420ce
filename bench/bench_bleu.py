"""bleu vs nltk sentence_bleu sentence by sentence (Valor's computation) on 10k pairs; plus 100k
rows end to end.

Ours is timed through ``evaluate`` (``compute`` as a user calls it, validation included) and its
scoring alone (``_compute``); the reference tokenises with nltk's RegexpTokenizer and calls
``sentence_bleu`` per pair, as Valor does. Runs alternate, median of several. Every per-sample
score of ours must equal nltk's (asserted after timing).
"""

from __future__ import annotations

import random
import statistics
import warnings

from _repo import REPO
from _timing import alternate, row

N = 10_000


def corpus(n: int, words: int = 25, seed: int = 0) -> tuple[list[str], list[str]]:
    """Translation-like sentence pairs over a 3,000-word vocabulary (Zipf-like draws)."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)] + ["the", "a", "of", ",", "$5", "don't"]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]

    def sentence(k: int) -> list[str]:
        return rng.choices(vocabulary, weights, k=k)

    predictions, references = [], []
    for _ in range(n):
        ref = sentence(rng.randint(words // 2, words * 3 // 2))
        pred = [w if rng.random() < 0.7 else rng.choices(vocabulary, weights)[0] for w in ref]
        predictions.append(" ".join(pred) + ".")
        references.append(" ".join(ref) + ".")
    return predictions, references


def main() -> list[dict]:
    import evaluate
    from nltk.tokenize import RegexpTokenizer
    from nltk.translate.bleu_score import sentence_bleu

    metric = evaluate.load(str(REPO / "metrics" / "bleu"))
    predictions, references = corpus(N)
    tokenizer = RegexpTokenizer(r"\w+|\$[\d]+|[^\s\.]+")

    def reference() -> list[float]:
        scores = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p, r in zip(predictions, references, strict=True):
                s = float(sentence_bleu([tokenizer.tokenize(r)], tokenizer.tokenize(p)))
                scores.append(s if s >= 1e-9 else 0.0)
        statistics.fmean(scores)  # the aggregate Valor reports, part of the timed work
        return scores

    def ours() -> dict:
        return metric.compute(predictions=predictions, references=references)

    def ours_core() -> dict:
        return metric._compute(predictions=predictions, references=[[r] for r in references])

    rows = []
    note = "reference: nltk RegexpTokenizer + sentence_bleu per pair (Valor)"
    mine, theirs = alternate(ours, reference)
    differing = sum(a != b for a, b in zip(ours()["scores"], reference(), strict=True))
    assert differing == 0, f"{differing} of {N} sentence BLEU scores differ from nltk's"
    note += f"; all {N} per-sample scores equal to nltk's (asserted)"
    rows.append(row(f"bleu {N // 1000}k pairs (evaluate.compute)", mine, theirs, note))
    mine, theirs = alternate(ours_core, reference)
    rows.append(row(f"bleu {N // 1000}k pairs (scoring only)", mine, theirs, note))
    big_p, big_r = corpus(100_000, seed=1)
    mine, _ = alternate(
        lambda: metric.compute(predictions=big_p, references=big_r), None, repeats=1
    )
    rows.append(row("bleu 100k rows (evaluate.compute)", mine, None,
                    "time only; includes corpus_bleu"))
    return rows


if __name__ == "__main__":
    print("| workload | ours (s) | reference (s) | ratio |\n|---|---|---|---|")
    main()
