"""Accuracy: exact-match accuracy with optional normalisation and fuzzy matching, as documented
for benchwise's ``accuracy`` (where benchwise's code and its document differ, the document)."""

from __future__ import annotations

from typing import Any

import evaluate
import numpy as np

from shared import Input, ValidatedMetric, stats, text, validation

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
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): model outputs (may be empty strings).
    references (list of str): ground-truth answers.
    case_sensitive (bool): respect letter case. Default False.
    normalize_text (bool): remove ASCII punctuation and collapse whitespace (otherwise only strip
        the ends). Default True.
    fuzzy_match (bool): count near matches (rapidfuzz fuzz.ratio) as correct. Default False.
    fuzzy_threshold (float in [0, 1]): minimum fuzz.ratio / 100 of a fuzzy match. Default 0.8.
    return_confidence (bool): add accuracy_confidence_interval. Default True.
    seed (int or None): seed of the bootstrap (None: fresh randomness). Default 0.
Returns:
    accuracy, exact_accuracy, fuzzy_accuracy (with fuzzy_match), correct, correct_fuzzy (with
    fuzzy_match), total, mean_score, std_score, individual_scores, match_types, scores,
    accuracy_confidence_interval (with return_confidence).
Examples:
    >>> accuracy = evaluate.load("metrics/accuracy")
    >>> result = accuracy.compute(predictions=["Paris", "London", "Tokyo"],
    ...                           references=["Paris", "London", "Berlin"])
    >>> round(result["accuracy"], 4), result["correct"], result["total"]
    (0.6667, 2, 3)
"""

N_RESAMPLES = 1000


class Accuracy(ValidatedMetric):
    INPUTS = (Input("predictions", allow_empty=True), Input("references"))

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=self.input_features(),
            codebase_urls=["https://github.com/Benchwise/benchwise"],
        )

    def _compute(
        self,
        predictions: list[str],
        references: list[str],
        case_sensitive: bool = False,
        normalize_text: bool = True,
        fuzzy_match: bool = False,
        fuzzy_threshold: float = 0.8,
        return_confidence: bool = True,
        seed: int | None = stats.DEFAULT_SEED,
    ) -> dict[str, Any]:
        case_sensitive = validation.flag("case_sensitive", case_sensitive)
        normalize_text = validation.flag("normalize_text", normalize_text)
        fuzzy_match = validation.flag("fuzzy_match", fuzzy_match)
        fuzzy_threshold = validation.probability("fuzzy_threshold", fuzzy_threshold)
        return_confidence = validation.flag("return_confidence", return_confidence)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise TypeError(f"seed must be a non-negative integer or None, got {seed!r}")

        total = len(predictions)
        pred_forms = text.comparison_forms(
            predictions, case_sensitive=case_sensitive, normalize=normalize_text
        )
        ref_forms = text.comparison_forms(
            references, case_sensitive=case_sensitive, normalize=normalize_text
        )
        exact = np.fromiter(
            (p == r for p, r in zip(pred_forms, ref_forms, strict=True)), dtype=bool, count=total
        )
        correct = int(np.count_nonzero(exact))
        individual = exact.astype(np.float64)
        match_types = np.where(exact, "exact", "none").astype(object)
        correct_samples = exact

        result: dict[str, Any] = {"exact_accuracy": correct / total}
        if fuzzy_match:
            fuzzy = _fuzzy_matches(pred_forms, ref_forms, np.flatnonzero(~exact), fuzzy_threshold)
            individual[fuzzy] = fuzzy_threshold
            match_types[fuzzy] = "fuzzy"
            correct_samples = exact.copy()
            correct_samples[fuzzy] = True
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
        if return_confidence:
            result["accuracy_confidence_interval"] = stats.bootstrap_ci(
                correct_samples, confidence=0.95, n_resamples=N_RESAMPLES, seed=seed
            )
        return result


def _fuzzy_matches(
    pred_forms: list[str], ref_forms: list[str], candidates: np.ndarray, threshold: float
) -> np.ndarray:
    """Indices among ``candidates`` whose fuzz.ratio / 100 >= ``threshold`` (one batch call)."""
    if candidates.size == 0:
        return candidates
    from rapidfuzz import fuzz, process

    similarity = process.cpdist(
        [pred_forms[i] for i in candidates],
        [ref_forms[i] for i in candidates],
        scorer=fuzz.ratio,
        dtype=np.float64,
    )
    return candidates[similarity / 100.0 >= threshold]
