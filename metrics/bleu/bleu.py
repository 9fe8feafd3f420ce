"""BLEU as Valor defines it: Valor's regular-expression tokens, nltk ``sentence_bleu`` semantics
per sample (a score below 1e-9 reported as 0.0), and nltk ``corpus_bleu`` over the corpus.

The default path (no smoothing) re-implements nltk's arithmetic operation for operation, so the
floats are identical, without nltk's per-sample ``Fraction`` objects and warnings. A smoothing
method is applied by nltk's own code.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from itertools import chain
from typing import Any

import evaluate
import numpy as np

from shared import (
    Example,
    Input,
    MetricOutput,
    Option,
    SampleResult,
    ValidatedMetric,
    text,
    validation,
    with_results,
)

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
_TINY = sys.float_info.min  # nltk method0's stand-in for a zero precision


def _weights(name: str, weights: Any) -> list[float]:
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__"):
        raise TypeError(f"{name} must be a list of numbers, got {type(weights).__name__}")
    if len(weights) == 0:
        raise ValueError(f"{name} is empty; give one weight per n-gram order")
    return validation.weights(name, list(weights), len(weights))


class Bleu(ValidatedMetric):
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
    PAUSES_GC = True

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            codebase_urls=["https://github.com/Striveworks/valor", "https://www.nltk.org/"],
            reference_urls=["https://www.aclweb.org/anthology/P02-1040.pdf"],
        )

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        smoothing: str | None = None,
    ) -> dict[str, Any]:
        tokenize = text.bleu_tokenizer()
        with text.paused_gc():
            hypotheses = list(map(tokenize, predictions))
            refs = [list(map(tokenize, sample)) for sample in references]
            if smoothing not in (None, "method0"):
                return _nltk_scores(hypotheses, refs, weights, smoothing)
            max_n = len(weights)
            numerators, hyp_len, ref_len = _ngram_statistics(hypotheses, refs, max_n)
        denominators = np.maximum(1, hyp_len[:, None] - np.arange(max_n)[None, :])
        scores: list[float] = []
        for num, den, h, r in zip(
            numerators.tolist(), denominators.tolist(), hyp_len.tolist(), ref_len.tolist(),
            strict=True,
        ):
            score = _bleu(num, den, h, r, weights)
            scores.append(score if score >= FLOOR else 0.0)
        corpus_num = numerators.sum(axis=0).tolist()
        corpus_den = denominators.sum(axis=0).tolist()
        corpus = _bleu(corpus_num, corpus_den, int(hyp_len.sum()), int(ref_len.sum()), weights)
        return _output(scores, corpus)


def _ngram_statistics(
    hypotheses: list[list[str]], references: list[list[list[str]]], max_n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: nltk ``modified_precision`` numerators for orders 1..max_n (columns
    0..max_n-1), the hypothesis length, and nltk's ``closest_ref_length``.

    Vectorised over the corpus: tokens become integer ids and every n-gram an integer id (from
    its (n-1)-gram id and its last token id). Per order, one sort of the keys (sample, n-gram,
    slot) - slot 0 for the hypothesis, 1..k for the sample's references - counts every n-gram
    per text; within each (sample, n-gram) group the clipped count is
    ``min(count in hypothesis, max count in any reference)``. An n-gram can only be shared by a
    hypothesis and a reference when its (n-1)-gram prefix is, so each order keeps only the
    positions whose prefix was shared. Integer arithmetic, so exact.
    """
    n_samples = len(hypotheses)
    texts = [*hypotheses, *(ref for refs in references for ref in refs)]
    ref_counts = np.fromiter((len(refs) for refs in references), dtype=np.int64, count=n_samples)
    ref_starts = np.cumsum(ref_counts) - ref_counts
    n_refs = int(ref_counts.sum())
    owner = np.concatenate((np.arange(n_samples), np.repeat(np.arange(n_samples), ref_counts)))
    ref_slot = np.arange(n_refs) - np.repeat(ref_starts, ref_counts) + 1
    slot = np.concatenate((np.zeros(n_samples, dtype=np.int64), ref_slot))
    n_slots = int(ref_counts.max()) + 1
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    hyp_len = lengths[:n_samples]

    # nltk: the reference length minimising (|len - hyp_len|, len); refs are grouped by sample
    ref_len = lengths[n_samples:]
    big = int(lengths.max(initial=0)) + 1
    closeness = np.abs(ref_len - hyp_len[owner[n_samples:]]) * big + ref_len
    closest = np.minimum.reduceat(closeness, ref_starts) % big

    numerators = np.zeros((n_samples, max_n), dtype=np.int64)
    n_tokens = int(lengths.sum())
    if n_tokens == 0:
        return numerators, hyp_len, closest
    tokens = list(chain.from_iterable(texts))
    vocabulary = dict(zip(dict.fromkeys(tokens), range(n_tokens), strict=False))
    token_ids = np.fromiter(map(vocabulary.__getitem__, tokens), dtype=np.int64, count=n_tokens)
    del tokens
    n_vocab = len(vocabulary)
    text_of = np.repeat(np.arange(len(texts)), lengths)
    remaining = np.repeat(np.cumsum(lengths), lengths) - np.arange(n_tokens)  # tokens left
    # keys (sample * n_grams + gram) * n_slots + slot must fit in int64
    limit = 2**62 // ((n_samples + 1) * n_slots)
    positions = np.arange(n_tokens)  # where the n-grams of the current order start
    gram = token_ids  # id of the n-gram starting at each position (valid at ``positions``)
    n_grams = n_vocab  # ids are < n_grams
    shared = np.empty(0, dtype=np.int64)  # (sample, n-gram) keys of the previous order's matches
    for n in range(1, max_n + 1):
        if n > 1:
            positions = positions[remaining[positions] >= n]
            prefix = owner[text_of[positions]] * n_grams + gram[positions]
            where = np.minimum(np.searchsorted(shared, prefix), shared.size - 1)
            positions = positions[shared[where] == prefix]
            if positions.size == 0:
                break
            previous = gram[positions]
            if n_grams * n_vocab >= limit:
                distinct, previous = np.unique(previous, return_inverse=True)
                n_grams = distinct.size
            combined = previous * n_vocab + token_ids[positions + n - 1]
            n_grams *= n_vocab
            if n_grams >= limit:
                distinct, combined = np.unique(combined, return_inverse=True)
                n_grams = distinct.size
            gram = np.empty(n_tokens, dtype=np.int64)
            gram[positions] = combined
        text = text_of[positions]
        keys, counts = np.unique(
            (owner[text] * n_grams + gram[positions]) * n_slots + slot[text], return_counts=True
        )
        group = keys // n_slots
        first = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        is_hyp = keys % n_slots == 0
        ref_max = np.maximum.reduceat(np.where(is_hyp, 0, counts), first)
        hyp_count = np.where(is_hyp[first], counts[first], 0)
        clipped = np.minimum(hyp_count, ref_max)
        numerators[:, n - 1] = np.bincount(
            group[first] // n_grams, weights=clipped, minlength=n_samples
        ).astype(np.int64)
        shared = group[first][clipped > 0]  # sorted (sample, n-gram) keys in both sides
        if shared.size == 0:
            break
    return numerators, hyp_len, closest


def _bleu(
    num: list[int], den: list[int], hyp_len: int, ref_len: int, weights: list[float]
) -> float:
    """nltk ``corpus_bleu``'s final step with ``SmoothingFunction().method0``, same operations.

    ``num[k]``, ``den[k]``: the (k+1)-gram precision's numerator and denominator.
    """
    if num[0] == 0:
        return 0.0
    logs = (w * math.log(num[i] / den[i] if num[i] else _TINY) for i, w in enumerate(weights))
    return float(_brevity_penalty(ref_len, hyp_len) * math.exp(math.fsum(logs)))


def _brevity_penalty(closest_ref_len: int, hyp_len: int) -> float:
    if hyp_len > closest_ref_len:
        return 1
    if hyp_len == 0:
        return 0
    return math.exp(1 - closest_ref_len / hyp_len)


def _nltk_scores(
    hypotheses: list[list[str]], refs: list[list[list[str]]], weights: list[float], smoothing: str
) -> dict[str, Any]:
    """Smoothed BLEU by nltk's own functions (its warnings silenced)."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    method = getattr(SmoothingFunction(), smoothing)
    scores: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for hyp, sample_refs in zip(hypotheses, refs, strict=True):
            score = float(
                sentence_bleu(sample_refs, hyp, weights=weights, smoothing_function=method)
            )
            scores.append(score if score >= FLOOR else 0.0)
        corpus = float(corpus_bleu(refs, hypotheses, weights=weights, smoothing_function=method))
    return _output(scores, corpus)


def _output(scores: list[float], corpus: float) -> MetricOutput:
    values = {"bleu": math.fsum(scores) / len(scores), "corpus_bleu": corpus, "scores": scores}
    return with_results(values, lambda: [SampleResult(score) for score in scores], ["scores"])
