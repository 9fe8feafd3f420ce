"""BLEU as Valor defines it: Valor's regular-expression tokens, nltk ``sentence_bleu`` semantics
per sample (a score below 1e-9 reported as 0.0), and nltk ``corpus_bleu`` over the corpus.

The floats come from ``bleu`` (``shared/kit/algorithms/bleu/``), equal to nltk's: without smoothing
a numpy engine over the whole corpus, with a smoothing method nltk's own functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from judge_metrics import (About, Example, Input, MetricOutput, Option, SampleResult,
                           ValidatedMetric, bleu, validation, with_results)

_CITATION = """\
@inproceedings{papineni2002bleu,
  title={Bleu: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={Proceedings of the 40th Annual Meeting of the ACL},
  pages={311--318},
  year={2002}
}
"""

_DESCRIPTION = """\
BLEU (BiLingual Evaluation Understudy) as in Valor's text-generation metrics: texts are tokenised
with the regular expression \\w+|\\$[\\d]+|[^\\s\\.]+ (periods are ignored), and each prediction is
scored against its reference(s) with nltk's sentence_bleu (uniform 4-gram weights by default, no
smoothing); a score below 1e-9 is reported as 0.0. "bleu" is the mean of the per-sample scores;
"corpus_bleu" is nltk's corpus_bleu over all samples.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the generated texts (may be empty strings).
    references (list of str or list of list of str): one or several references per prediction.
Returns:
    bleu (float): mean of the per-sample scores.
    corpus_bleu (float): nltk corpus_bleu over all samples.
    scores (list of float): per-sample sentence BLEU.
Examples:
    >>> bleu = evaluate.load("metrics/bleu")
    >>> result = bleu.compute(predictions=["the cat sat on the mat"],
    ...                       references=["the cat sat on the mat"])
    >>> result["bleu"]
    1.0
"""

DEFAULT_WEIGHTS = (0.25, 0.25, 0.25, 0.25)
FLOOR = 1e-9
SMOOTHING_METHODS = tuple(f"method{i}" for i in range(8))


def _weights(name: str, weights: Any) -> list[float]:
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__"):
        raise TypeError(f"{name} must be a list of numbers, got {type(weights).__name__}")
    if len(weights) == 0:
        raise ValueError(f"{name} is empty; give one weight per n-gram order")
    return validation.weights(name, list(weights), len(weights))


class Bleu(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION,
                  ("https://www.aclweb.org/anthology/P02-1040.pdf",),
                  codebase_urls=("https://github.com/Striveworks/valor", "https://www.nltk.org/"))
    INPUTS = (Input("predictions", allow_empty=True), Input("references", kind="texts"))
    OPTIONS = (
        Option("weights", list, DEFAULT_WEIGHTS, check=_weights, type_doc="list of float",
               doc="n-gram weights; their length is the largest n-gram order (BLEU-4 by "
               "default, [0.5, 0.5] for BLEU-2); non-negative, finite, not all zero"),
        Option("smoothing", str, None, nullable=True, choices=SMOOTHING_METHODS,
               doc='None (no smoothing, nltk\'s method0) or the name of an nltk '
               'SmoothingFunction method, "method0" ... "method7"'),
    )
    HEADLINE = ("bleu",)
    DECISION_THRESHOLD = None  # agree: overlap has no natural cut
    EXAMPLE = Example({
        "predictions": ["The cat sat on the mat.", "A quick brown fox jumps over the dog."],
        "references": ["The cat sat on the mat.",
                       ["The quick brown fox jumps over the lazy dog.",
                        "A fast brown fox leaps over the dog."]],
    })

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        smoothing: str | None = None,
    ) -> MetricOutput:
        sentences, corpus = bleu.bleu_scores(predictions, references, weights, smoothing)
        scores = [score if score >= FLOOR else 0.0 for score in sentences]
        values = {"bleu": math.fsum(scores) / len(scores), "corpus_bleu": corpus, "scores": scores}
        return with_results(values, lambda: [SampleResult(score) for score in scores], ["scores"])
