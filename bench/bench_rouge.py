"""rouge vs Google's `rouge_score` (what Hugging Face evaluate's rouge runs) at 1k, 3k and 10k
pairs, all four types, stemmer off and on, side by side in one run; plus 100k rows end to end.

Ours is timed through ``evaluate`` (``compute`` as a user calls it, validation included); the
reference is ``RougeScorer.score`` per pair, as evaluate's rouge calls it, with the mean taken.
Runs alternate, median of several. Every per-sample F-measure of ours must equal the reference's
(asserted here, after timing): a fast wrong answer is not a result. The long-input path (exact
linear-memory LCS for pairs whose table would exceed ``TABLE_CELLS``) is in place: these pairs
are short, so it only costs its routing check.
"""

from __future__ import annotations

import random
import statistics

from _repo import REPO
from _timing import alternate, row

SIZES = (1_000, 3_000, 10_000)
# more repetitions where a run is short (the median of 3 runs of 10 ms is noise)
REPEATS = {1_000: 7, 3_000: 5, 10_000: 3}
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def corpus(n: int, words: int = 60, seed: int = 0) -> tuple[list[str], list[str]]:
    """English-like summaries of about ``words`` words, sentences on separate lines, and
    references that share most of their words with the prediction."""
    rng = random.Random(seed)
    stems = ["report", "market", "govern", "announc", "increas", "develop", "nation", "compan",
             "research", "scien", "climat", "energ", "polic", "elect", "econom", "health",
             "student", "teach", "build", "water", "citi", "court", "minist", "product"]
    suffixes = ["", "s", "ed", "ing", "ment", "ation", "er", "ers", "al", "ly", "ies", "y"]
    glue = ["the", "a", "of", "in", "to", "and", "on", "for", "with", "by", "was", "is"]

    def text(k: int) -> list[str]:
        return [
            rng.choice(glue) if rng.random() < 0.35 else rng.choice(stems) + rng.choice(suffixes)
            for _ in range(k)
        ]

    def lines(tokens: list[str]) -> str:
        out, start = [], 0
        while start < len(tokens):
            stop = start + rng.randint(8, 20)
            out.append(" ".join(tokens[start:stop]).capitalize() + ".")
            start = stop
        return "\n".join(out)

    predictions, references = [], []
    for _ in range(n):
        ref = text(rng.randint(words // 2, words * 3 // 2))
        kept = ref[: rng.randint(10, len(ref))]
        pred = [w if rng.random() < 0.6 else rng.choice(ref) for w in kept]
        predictions.append(lines(pred))
        references.append(lines(ref))
    return predictions, references


def main() -> list[dict]:
    import evaluate
    from rouge_score import rouge_scorer
    from rouge_score_rs import rouge_scorer as rouge_score_rs

    metric = evaluate.load(str(REPO / "metrics" / "rouge"))
    all_predictions, all_references = corpus(max(SIZES))
    rows = []
    for n in SIZES:
        predictions, references = all_predictions[:n], all_references[:n]
        for use_stemmer in (False, True):
            scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
            outputs: dict[str, list] = {}

            def reference(scorer=scorer, outputs=outputs, predictions=predictions,
                          references=references) -> None:
                scores = [scorer.score(r, p) for p, r in zip(predictions, references,
                                                             strict=True)]
                outputs["reference"] = [{k: s[k].fmeasure for k in TYPES} for s in scores]
                outputs["reference mean"] = {
                    k: statistics.fmean(s[k].fmeasure for s in scores) for k in TYPES
                }

            def ours(use_stemmer=use_stemmer, outputs=outputs, predictions=predictions,
                     references=references) -> None:
                outputs["ours"] = metric.compute(
                    predictions=predictions, references=references, use_stemmer=use_stemmer
                )["scores"]

            engine_scorer = rouge_score_rs.RougeScorer(TYPES, use_stemmer=use_stemmer)

            def engine(engine_scorer=engine_scorer, outputs=outputs, predictions=predictions,
                       references=references) -> None:
                scores = engine_scorer.score_batch(references, predictions)
                outputs["engine"] = [{k: s[k].fmeasure for k in TYPES} for s in scores]

            ours()  # warm-up
            engine()
            mine, theirs = alternate(ours, reference, repeats=REPEATS[n])
            alone, _ = alternate(engine, None, repeats=REPEATS[n])
            differing = sum(a != b for a, b in zip(outputs["ours"], outputs["reference"],
                                                   strict=True))
            assert differing == 0, f"{differing} of {n} samples differ from rouge_score"
            stemmer = "on" if use_stemmer else "off"
            rows.append(row(
                f"rouge {n // 1000}k pairs, 4 types, stemmer {stemmer} (evaluate.compute)",
                mine, theirs, f"reference: rouge_score RougeScorer.score per pair; all {n} x 4 "
                "F-measures equal to the reference's (asserted); the engine we call, "
                f"rouge-score-rs score_batch alone (on every core): {alone:.4f} s, "
                f"{theirs / alone:.0f}x the reference: ours adds validation, long-input routing "
                "and the output lists"))
    big_p, big_r = corpus(100_000, words=20, seed=1)
    mine, _ = alternate(
        lambda: metric.compute(predictions=big_p, references=big_r), None, repeats=1
    )
    rows.append(row("rouge 100k rows, ~20 words, 4 types (evaluate.compute)",
                    mine, None, "time only"))
    return rows


if __name__ == "__main__":
    print("| workload | ours (s) | reference (s) | ratio |\n|---|---|---|---|")
    main()
