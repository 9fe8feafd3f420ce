"""Accuracy: exact-match accuracy with optional normalisation and fuzzy matching, as documented
for benchwise's ``accuracy`` (where benchwise's code and its document differ, the document); and,
with ``mode``, short-answer QA correctness: SQuAD-style token precision/recall/F1 or the recall
of the gold answer's content words in the prediction, best over several references."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from judge_metrics import (About, Example, Input, Option, SampleResult, ValidatedMetric, qa_match,
                           stats, text, with_results)

_CITATION = """\
@software{benchwise,
  title = {Benchwise: evaluation metrics for LLM benchmarks},
  url = {https://github.com/Benchwise/benchwise},
}
"""

_DESCRIPTION = """\
Exact-match accuracy between predictions and references. By default both are lowercased, ASCII
punctuation is removed, runs of whitespace are collapsed and the ends stripped before comparing.
With fuzzy_match=True a pair that does not match exactly still counts as correct when rapidfuzz's
fuzz.ratio / 100 >= fuzzy_threshold. A seeded 95% percentile-bootstrap confidence interval of the
accuracy is returned unless return_confidence=False.

A sample may have several references (a list of strings, or one string split at
reference_separator): any of them may match. With mode="contains", "recall", "precision" or
"f1" the metric scores short QA answers instead: both sides get SQuAD's normalisation (extended
for numbers, accents and glued words), each sample gets a graded score in [0, 1] from its best
reference (individual_scores, usable for AUROC), and a sample counts as correct when that score
is >= threshold (default 0.5). "contains" is the recall of the reference's content words (not
stop words, not words of the question) in the prediction: the mode for long LLM answers around a
short gold answer.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): model outputs (may be empty strings).
    references (list of str or list of list of str): ground-truth answers; a list of strings
        per sample gives several acceptable answers (the best one counts).
    questions (list of str, optional): the questions; mode="contains" ignores reference words
        that the question holds. Other modes ignore questions.
Returns:
    accuracy, exact_accuracy, fuzzy_accuracy (with fuzzy_match), correct, correct_fuzzy (with
    fuzzy_match), total, mean_score, std_score, individual_scores, match_types, scores,
    fuzzy_skipped (when a fuzzy comparison was too large), threshold and best_reference (modes
    other than "exact"), accuracy_confidence_interval (with return_confidence).
Examples:
    >>> accuracy = evaluate.load("metrics/accuracy")
    >>> result = accuracy.compute(predictions=["Paris", "London", "Tokyo"],
    ...                           references=["Paris", "London", "Berlin"])
    >>> round(result["accuracy"], 4), result["correct"], result["total"]
    (0.6667, 2, 3)
    >>> result = accuracy.compute(
    ...     predictions=["The X-rays were discovered by Wilhelm Röntgen in 1895."],
    ...     references=["Wilhelm Conrad Röntgen / Röntgen"], reference_separator="/",
    ...     mode="contains")
    >>> result["accuracy"], result["individual_scores"], result["best_reference"]
    (1.0, [1.0], [1])
"""

N_RESAMPLES = 1000
MODES = ("exact", "contains", "recall", "precision", "f1")
# The graded scores are shares of words. 0.5 means "at least half": at least half of the gold
# answer's content words for "contains" (a surname for a two-word name, "Judith Keppel" for
# "Judith Cynthia Aline Keppel", but never one word of three), the usual cut-off of a token F1
# match (qa-metrics' f1_match) for the SQuAD modes. Not fitted to any labelled data.
DEFAULT_THRESHOLD = 0.5
# rapidfuzz's ratio costs about len(a) * len(b) / 64 word operations once the common prefix and
# suffix are removed: 10**9 cells (two different texts of about 30,000 characters) take about
# 0.04 s; two different 1 MB texts would take about half a minute. Larger pairs are not compared
# (they are listed in fuzzy_skipped).
FUZZY_MAX_CELLS = 10**9
# "contains": how far the partial similarity may move a score within its side of the threshold
# (qa_match.nudge). Small, so the recall of content words orders the samples and the similarity
# only orders samples of equal recall; it never changes a decision.
TIE_BREAK_WEIGHT = 0.1


def _check_seed(name: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise TypeError(f"{name} must be a non-negative integer or None, got {value!r}")
    return value


def _check_separator(name: str, value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"{name} must be a non-empty string or None, got {value!r}")
    return value


class Accuracy(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION, reference_urls=(),
                  codebase_urls=("https://github.com/Benchwise/benchwise",))
    INPUTS = (
        Input("predictions", allow_empty=True),
        Input("references", kind="texts"),
        Input("questions", required=False, allow_empty=True),
    )
    OPTIONS = (
        Option("case_sensitive", bool, False, doc='respect letter case (mode="exact" only)'),
        Option("normalize_text", bool, True,
               doc="remove ASCII punctuation and collapse whitespace (otherwise only strip the "
               'ends; mode="exact" only)'),
        Option("fuzzy_match", bool, False,
               doc='count near matches (rapidfuzz fuzz.ratio) as correct (mode="exact" only)'),
        Option("fuzzy_threshold", float, 0.8, range=(0, 1),
               doc="minimum fuzz.ratio / 100 of a fuzzy match"),
        Option("mode", str, "exact", choices=MODES,
               doc='"exact" (benchwise\'s exact or fuzzy match), "contains" (recall of the '
               'reference\'s content words in the prediction), "recall", "precision" or "f1" '
               "(SQuAD token overlap)"),
        Option("threshold", float, None, range=(0, 1), nullable=True, default_doc="None (0.5)",
               doc='decision threshold on the graded score of the modes other than "exact"; '
               "None means 0.5"),
        Option("reference_separator", str, None, nullable=True, check=_check_separator,
               doc='split every reference string at this separator into aliases, e.g. "/" for '
               'EVOUNA\'s "Wilhelm Röntgen / Wilhelm Conrad Röntgen"'),
        Option("return_confidence", bool, True, doc="add accuracy_confidence_interval"),
        Option("seed", int, stats.DEFAULT_SEED, nullable=True, check=_check_seed,
               type_doc="int >= 0 or None",
               doc="seed of the bootstrap (None: fresh randomness)"),
    )
    HEADLINE = ("accuracy",)
    EXAMPLE = Example({
        "predictions": ["Paris", "London", "Tokyo"],
        "references": ["Paris", "London", "Berlin"],
        "questions": ["Capital of France?", "Capital of the United Kingdom?",
                      "Capital of Germany?"],
    })

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        questions: list[str] | None = None,
        case_sensitive: bool = False,
        normalize_text: bool = True,
        fuzzy_match: bool = False,
        fuzzy_threshold: float = 0.8,
        mode: str = "exact",
        threshold: float | None = None,
        reference_separator: str | None = None,
        return_confidence: bool = True,
        seed: int | None = stats.DEFAULT_SEED,
    ) -> dict[str, Any]:
        threshold = DEFAULT_THRESHOLD if threshold is None else threshold
        if mode != "exact" and (fuzzy_match or case_sensitive or not normalize_text):
            raise ValueError(
                f"case_sensitive, normalize_text and fuzzy_match apply to mode='exact' only; "
                f"mode={mode!r} always uses the QA normalisation"
            )
        aliases = references if reference_separator is None else [
            [a for r in refs for a in qa_match.split_aliases(r, reference_separator)]
            for refs in references
        ]
        if mode == "exact":
            result, correct_samples = _exact_scores(
                predictions, aliases, case_sensitive, normalize_text, fuzzy_match,
                fuzzy_threshold,
            )
        else:
            result, correct_samples = _qa_scores(predictions, aliases, questions, mode, threshold)
        if return_confidence:
            result["accuracy_confidence_interval"] = stats.bootstrap_ci(
                correct_samples, confidence=0.95, n_resamples=N_RESAMPLES, seed=seed
            )
        per_sample = [k for k in ("individual_scores", *_DETAILS, "scores") if k in result]
        return with_results(result, lambda: _results(result), per_sample)


_DETAILS = ("match_types", "best_reference")  # per-sample lists that are a row's details


def _results(result: dict[str, Any]) -> list[SampleResult]:
    columns = {key: result[key] for key in _DETAILS if key in result}
    return [SampleResult(score, {key: values[i] for key, values in columns.items()})
            for i, score in enumerate(result["scores"])]


def _exact_scores(
    predictions: list[str], aliases: list[list[str]], case_sensitive: bool,
    normalize_text: bool, fuzzy_match: bool, fuzzy_threshold: float,
) -> tuple[dict[str, Any], np.ndarray]:
    """The seed's exact (and fuzzy) matching; a sample matches when any of its aliases does."""
    total = len(predictions)
    pred_forms = text.comparison_forms(
        predictions, case_sensitive=case_sensitive, normalize=normalize_text
    )
    owners = np.repeat(np.arange(total), [len(a) for a in aliases])
    ref_forms = text.comparison_forms(
        [a for refs in aliases for a in refs], case_sensitive=case_sensitive,
        normalize=normalize_text,
    )
    pair_preds = pred_forms if owners.size == total else [pred_forms[i] for i in owners]
    equal = np.fromiter(
        (p == r for p, r in zip(pair_preds, ref_forms, strict=True)), dtype=bool,
        count=owners.size,
    )
    several = owners.size != total
    exact = np.bincount(owners[equal], minlength=total) > 0 if several else equal
    starts = np.concatenate(([0], np.cumsum([len(a) for a in aliases])[:-1]))
    best = np.zeros(total, dtype=np.int64)  # the matching alias of each sample (first if several)
    if several:
        hits = np.flatnonzero(equal)
        samples, first = np.unique(owners[hits], return_index=True)
        best[samples] = hits[first] - starts[samples]
    correct = int(np.count_nonzero(exact))
    individual = exact.astype(np.float64)
    match_types = np.where(exact, "exact", "none").astype(object)
    correct_samples = exact

    result: dict[str, Any] = {"exact_accuracy": correct / total}
    skipped: list[int] = []
    if fuzzy_match:
        candidates = np.flatnonzero(~exact[owners])
        similarity, too_large = _fuzzy_similarity(
            [pair_preds[k] for k in candidates], [ref_forms[k] for k in candidates],
            fuzzy_threshold,
        )
        matched = np.zeros(total, dtype=bool)
        matched[owners[candidates[similarity >= fuzzy_threshold]]] = True
        fuzzy = np.flatnonzero(matched)
        unsure = np.zeros(total, dtype=bool)
        unsure[owners[candidates[too_large]]] = True
        skipped = np.flatnonzero(unsure & ~matched).tolist()
        if several:
            # the most similar alias of each sample that has no exact match
            ranked = candidates[np.lexsort((-similarity, owners[candidates]))]
            samples, first = np.unique(owners[ranked], return_index=True)
            best[samples] = ranked[first] - starts[samples]
        individual[fuzzy] = fuzzy_threshold
        match_types[fuzzy] = "fuzzy"
        correct_samples = exact | matched
        correct_fuzzy = int(np.count_nonzero(correct_samples))
        result["fuzzy_accuracy"] = correct_fuzzy / total
        result["correct_fuzzy"] = correct_fuzzy
    result["accuracy"] = result["fuzzy_accuracy"] if fuzzy_match else result["exact_accuracy"]
    mean_score, std_score = stats.mean_std(individual)
    result.update(
        correct=correct,
        total=total,
        mean_score=mean_score,
        std_score=std_score,
        individual_scores=individual.tolist(),
        match_types=match_types.tolist(),
        scores=correct_samples.astype(np.float64).tolist(),
    )
    if skipped:
        result["fuzzy_skipped"] = skipped
    if several:
        result["best_reference"] = best.tolist()
    return result, correct_samples


def _fuzzy_similarity(
    preds: list[str], refs: list[str], threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """``fuzz.ratio / 100`` of each pair (one batch call), and which pairs were too large to
    compare (similarity 0.0 there).

    A pair whose lengths alone rule out the threshold (the ratio is at most
    ``2 * min(len) / (len(a) + len(b))``) is not compared. A pair is too large when, after its
    common prefix and suffix (which rapidfuzz strips first) are removed, the product of the two
    remaining lengths exceeds ``FUZZY_MAX_CELLS``.
    """
    n = len(preds)
    similarity = np.zeros(n)
    too_large = np.zeros(n, dtype=bool)
    if n == 0:
        return similarity, too_large
    from rapidfuzz import fuzz, process

    lengths_a = np.fromiter(map(len, preds), dtype=np.int64, count=n)
    lengths_b = np.fromiter(map(len, refs), dtype=np.int64, count=n)
    compare = np.ones(n, dtype=bool)
    for k in np.flatnonzero(lengths_a * lengths_b > FUZZY_MAX_CELLS):
        a, b = preds[k], refs[k]
        if 2 * min(len(a), len(b)) < threshold * (len(a) + len(b)):
            compare[k] = False  # cannot reach the threshold
            continue
        prefix = _common_prefix_length(a, b)
        suffix = _common_prefix_length(a[prefix:][::-1], b[prefix:][::-1])
        if (len(a) - prefix - suffix) * (len(b) - prefix - suffix) > FUZZY_MAX_CELLS:
            compare[k] = False
            too_large[k] = True
    index = np.flatnonzero(compare)
    if index.size:
        similarity[index] = process.cpdist(
            [preds[k] for k in index], [refs[k] for k in index], scorer=fuzz.ratio,
            dtype=np.float64,
        ) / 100.0
    return similarity, too_large


def _common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over C-level slice comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _qa_scores(
    predictions: list[str], aliases: list[list[str]], questions: list[str] | None, mode: str,
    threshold: float,
) -> tuple[dict[str, Any], np.ndarray]:
    """Graded QA scores: per sample the best alias's score under ``mode`` (``scores`` and
    ``individual_scores``); correct when the score is >= ``threshold``; exact when the
    normalised tokens are equal (SQuAD's EM)."""
    total = len(predictions)
    tokens_of: dict[str, list[str]] = {}

    def tokens(value: str) -> list[str]:
        found = tokens_of.get(value)
        if found is None:
            found = tokens_of[value] = qa_match.qa_tokens(value)
        return found

    part = {"precision": 0, "recall": 1, "f1": 2}.get(mode)
    individual = np.zeros(total)
    exact = np.zeros(total, dtype=bool)
    best_reference = [0] * total
    for i, prediction in enumerate(predictions):
        predicted = tokens(prediction)
        counts = Counter(predicted) if part is None else None
        asked = tokens(questions[i]) if part is None and questions is not None else ()
        best = -1.0
        for j, alias in enumerate(aliases[i]):
            reference = tokens(alias)
            if reference == predicted:  # SQuAD's exact match (also when both are empty)
                exact[i] = True
                score = 1.0
            elif part is None:
                score = qa_match.nudge(
                    qa_match.content_recall(reference, counts, asked),
                    qa_match.partial_similarity(reference, predicted), threshold,
                    TIE_BREAK_WEIGHT,
                )
            else:
                score = qa_match.token_overlap(reference, predicted)[part]
            if score > best:
                best, best_reference[i] = score, j
        individual[i] = best
    correct_samples = individual >= threshold
    correct = int(np.count_nonzero(exact))
    match_types = np.where(exact, "exact", np.where(correct_samples, mode, "none"))
    mean_score, std_score = stats.mean_std(individual)
    result = {
        "accuracy": float(np.count_nonzero(correct_samples)) / total,
        "exact_accuracy": correct / total,
        "correct": correct,
        "total": total,
        "mean_score": mean_score,
        "std_score": std_score,
        "individual_scores": individual.tolist(),
        "match_types": match_types.tolist(),
        "scores": individual.tolist(),  # graded, so per-row outputs (CLI, agree) rank samples
        "threshold": threshold,
        "best_reference": best_reference,
    }
    return result, correct_samples
