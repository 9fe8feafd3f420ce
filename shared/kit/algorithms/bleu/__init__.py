"""nltk's BLEU, every float equal to nltk's, for a whole corpus at once: ``bleu_scores``.

Without smoothing (nltk's ``method0``) nltk's arithmetic is re-implemented operation for
operation, without its per-sample ``Fraction`` objects and warnings: every distinct text is
tokenised once, by the classes of its characters as the compiled tokenizer itself classifies
them (``tokens``); the clipped n-gram counts come from sorting each sample's n-gram keys in rows
of similar length (``ngrams``); the final logs, ``fsum`` and ``exp`` are Python's ``math``, once
per distinct argument (``_sentence_scores``). A smoothing method is applied by nltk's own code.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ....base import text
from .ngrams import ngram_statistics

_TINY = sys.float_info.min  # nltk method0's stand-in for a zero precision


class BleuScores(NamedTuple):
    """nltk ``sentence_bleu`` of each sample and ``corpus_bleu`` of all of them."""

    sentences: list[float]
    corpus: float


def bleu_scores(predictions: list[str], references: list[list[str]], weights: Sequence[float],
                smoothing: str | None = None) -> BleuScores:
    """nltk's sentence and corpus BLEU of the predictions against their references (one or more
    each), tokenised by ``text.bleu_tokenizer``; ``smoothing``: None (or "method0") or the name
    of an nltk ``SmoothingFunction`` method."""
    if smoothing not in (None, "method0"):
        return _nltk_scores(predictions, references, list(weights), smoothing)
    max_n = len(weights)
    numerators, hyp_len, ref_len = ngram_statistics(predictions, references, max_n)
    denominators = np.maximum(1, hyp_len[:, None] - np.arange(max_n)[None, :])
    sentences = _sentence_scores(numerators, denominators, hyp_len, ref_len, weights)
    corpus = _bleu(numerators.sum(axis=0).tolist(), denominators.sum(axis=0).tolist(),
                   int(hyp_len.sum()), int(ref_len.sum()), weights)
    return BleuScores(sentences, corpus)


def _sentence_scores(numerators: np.ndarray, denominators: np.ndarray, hyp_len: np.ndarray,
                     ref_len: np.ndarray, weights: Sequence[float]) -> list[float]:
    """``_bleu`` of every sample, the same float operations: the divisions, products and
    comparisons in numpy (IEEE, correctly rounded, as Python's), ``log``, ``exp`` and ``fsum``
    by Python's ``math``, each once per distinct argument."""
    scores = np.zeros(len(hyp_len))
    live = np.flatnonzero(numerators[:, 0] > 0)
    if live.size == 0:
        return scores.tolist()
    num, den = numerators[live], denominators[live]
    # each distinct precision (numerator, denominator) once: its log (nltk's tiny stand-in for 0)
    base = int(den.max()) + 1
    pairs, which = np.unique(num * base + den, return_inverse=True)
    which = which.reshape(num.shape)
    tiny = math.log(_TINY)
    logs = np.array([math.log(n / d) if n else tiny
                     for n, d in zip(*(part.tolist() for part in np.divmod(pairs, base)),
                                     strict=True)])
    # each distinct row of precisions once: exp(fsum(w_i * log p_i))
    if pairs.size ** which.shape[1] < 2**62:
        rows, row_of = np.unique(which @ (pairs.size ** np.arange(which.shape[1])),
                                 return_index=True, return_inverse=True)[1:]
    else:
        rows, row_of = np.arange(len(which)), np.arange(len(which))
    terms = (np.asarray(weights, dtype=np.float64) * logs[which[rows]]).tolist()
    geometric = np.array(list(map(math.exp, map(math.fsum, terms))))[row_of]
    h, r = hyp_len[live], ref_len[live]
    penalty = np.ones(live.size)
    short = h <= r  # hyp_len > 0 here: it has a unigram match
    penalty[short] = list(map(math.exp, (1 - r[short] / h[short]).tolist()))
    scores[live] = penalty * geometric
    return scores.tolist()


def _bleu(
    num: list[int], den: list[int], hyp_len: int, ref_len: int, weights: Sequence[float]
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


def _nltk_scores(predictions: list[str], references: list[list[str]], weights: list[float],
                 smoothing: str) -> BleuScores:
    """Smoothed BLEU by nltk's own functions (its warnings silenced)."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    tokenize = text.bleu_tokenizer()
    with text.paused_gc():
        hypotheses = list(map(tokenize, predictions))
        refs = [list(map(tokenize, sample)) for sample in references]
    method = getattr(SmoothingFunction(), smoothing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sentences = [float(sentence_bleu(sample_refs, hyp, weights=weights,
                                         smoothing_function=method))
                     for hyp, sample_refs in zip(hypotheses, refs, strict=True)]
        corpus = float(corpus_bleu(refs, hypotheses, weights=weights, smoothing_function=method))
    return BleuScores(sentences, corpus)
