"""ROUGE with Hugging Face evaluate's ``rouge`` interface, offline, scored by a compiled engine
whose floats are identical to Google's ``rouge_score`` (``rouge-score-rs``; ``rouge_score``
itself when that is not installed).

Long texts: the engine (like rouge_score) fills a ``len(reference) x len(prediction)`` table for
rougeL and for each sentence pair of rougeLsum; two different 1 MB texts would need 54 GB. A pair
whose table could exceed ``TABLE_CELLS`` has its LCS types computed by
``judge_metrics.lcs`` instead (bit-parallel rows, linear memory, the same values); n-gram types
always go to the engine (their cost is linear). Beyond ``MAX_LCS_CELLS`` (or ``MAX_LSUM_STEPS``
for rougeLsum's sentence pairs) an LCS type of that row is not computed: ``None`` with a reason
in ``unmeasured``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np
from judge_metrics import (About, Example, Input, Option, SampleResult, ValidatedMetric, lcs, text,
                           validation, with_results)

_CITATION = """\
@inproceedings{lin-2004-rouge,
    title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
    author = "Lin, Chin-Yew",
    booktitle = "Text Summarization Branches Out",
    month = jul,
    year = "2004",
    address = "Barcelona, Spain",
    publisher = "Association for Computational Linguistics",
    url = "https://www.aclweb.org/anthology/W04-1013",
    pages = "74--81",
}
"""

_DESCRIPTION = """\
ROUGE (Recall-Oriented Understudy for Gisting Evaluation) compares a generated text with one or
more references by overlapping n-grams (rouge1, rouge2, ... rouge9), the longest common
subsequence (rougeL) and the summary-level LCS over newline-separated sentences (rougeLsum).
Each value is an F-measure in [0, 1], identical to Google's rouge_score package (the engine
behind Hugging Face evaluate's rouge); with several references a sample takes, per ROUGE type,
its best reference (rouge_score's score_multi).
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the generated texts (may be empty strings).
    references (list of str or list of list of str): one or several references per prediction.
Returns:
    rouge1, rouge2, rougeL, rougeLsum (float, or list of float with use_aggregator=False): one key
        per requested type.
    scores (list of dict): per sample, {rouge type: F-measure}.
    unmeasured (list of dict, only when some value was not computed): {"index", "rouge_type",
        "reason"} for an LCS type beyond the long-input limits (its value is None).
Examples:
    >>> rouge = evaluate.load("metrics/rouge")
    >>> result = rouge.compute(predictions=["hello there", "general kenobi"],
    ...                        references=["hello there", "general kenobi"])
    >>> result["rouge1"], result["rougeLsum"]
    (1.0, 1.0)
"""

DEFAULT_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
VALID_TYPES = frozenset({f"rouge{n}" for n in range(1, 10)} | {"rougeL", "rougeLsum"})
LCS_TYPES = ("rougeL", "rougeLsum")

# Up to this many LCS table cells (64 MiB of the engine's 4-byte cells) a pair goes to the
# compiled engine. Default tokenizer: tokens never outnumber characters, so a pair whose
# character counts multiply to at most this needs no tokenising to decide.
TABLE_CELLS = 2**24
# The exact linear-memory path takes about len(ref) * len(pred) / 2**30 seconds per LCS type
# (2 s for two 1 MB English texts of ~190k tokens); above this many cells (~185k x 185k
# tokens) an LCS type of the row is not computed, rather than running for minutes.
MAX_LCS_CELLS = 2**35
# rougeLsum on the exact path walks back once per sentence pair: about
# len(ref) * sentences(pred) + len(pred) * sentences(ref) Python steps, limited to this.
MAX_LSUM_STEPS = 2**25


class _CallableTokenizer:
    """Adapts a function ``str -> list[str]`` to rouge_score's tokenizer interface (as HF does)."""

    def __init__(self, function: Callable[[str], list[str]]) -> None:
        self.function = function

    def tokenize(self, text: str) -> list[str]:
        return self.function(text)


def _spare_engine_thread() -> None:
    """Give the engine's thread pool one thread more than the cores it may use, unless the user
    set ``RAYON_NUM_THREADS``.

    rouge-score-rs scores a batch on a rayon pool of one thread per core, built at its first
    parallel call. With exactly one thread per core, a worker that wakes late leaves its share
    to the other one: measured on 2 cores, 1k pairs took 8 ms or 14 ms (the one-thread time)
    from one call to the next, bimodally, and a spare thread made every call 8-9 ms. 10k pairs
    took the same time either way (the late start is a smaller share of a longer call). The
    variable is read once, when the pool is built, so it is set before the first score, and
    only where nobody has set it.
    """
    if "RAYON_NUM_THREADS" not in os.environ:
        affinity = getattr(os, "sched_getaffinity", None)
        cores = len(affinity(0)) if affinity else (os.cpu_count() or 1)
        os.environ["RAYON_NUM_THREADS"] = str(cores + 1)


def _scorer(rouge_types: list[str], use_stemmer: bool, tokenizer: Any) -> Any:
    _spare_engine_thread()
    try:
        from rouge_score_rs import rouge_scorer
    except ImportError:
        from rouge_score import rouge_scorer
    return rouge_scorer.RougeScorer(rouge_types, use_stemmer=use_stemmer, tokenizer=tokenizer)


def _default_tokenize(use_stemmer: bool) -> Callable[[str], list[str]]:
    try:
        from rouge_score_rs import tokenizers
    except ImportError:
        from rouge_score import tokenizers
    return tokenizers.DefaultTokenizer(use_stemmer=use_stemmer).tokenize


def _fmeasures(scorer: Any, targets: list[str], predictions: list[str]) -> list[dict[str, float]]:
    """Per pair, {rouge type: F-measure}, in the scorer's order of types."""
    batch = getattr(scorer, "score_batch", None)
    if batch is not None:
        scores = batch(targets, predictions)
    else:
        scores = [scorer.score(t, p) for t, p in zip(targets, predictions, strict=True)]
    return [{key: score.fmeasure for key, score in row.items()} for row in scores]


def _best_reference(pair_scores: list[dict[str, float]], sizes: np.ndarray, types: list[str]
                    ) -> list[dict[str, float]]:
    """Per sample and type, the best of its references' F-measures (``sizes[i]`` consecutive
    pairs are sample ``i``'s), as rouge_score's ``score_multi`` takes them."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    best = [
        np.maximum.reduceat(np.fromiter(map(itemgetter(key), pair_scores), dtype=np.float64,
                                        count=len(pair_scores)), starts).tolist()
        for key in types
    ]
    return [dict(zip(types, row, strict=True)) for row in zip(*best, strict=True)]


def _long_pairs(targets: list[str], predictions: list[str], tokenize: Callable[[str], list[str]],
                default_tokenizer: bool) -> list[int]:
    """Indices of the pairs whose LCS table could exceed ``TABLE_CELLS``."""
    def sizes(texts: list[str]) -> np.ndarray:
        if default_tokenizer:  # tokens never outnumber characters
            return np.fromiter(map(len, texts), dtype=np.float64, count=len(texts))
        counts = {t: len(tokenize(t)) for t in dict.fromkeys(texts)}
        return np.fromiter(map(counts.__getitem__, texts), dtype=np.float64, count=len(texts))

    return np.flatnonzero(sizes(targets) * sizes(predictions) > TABLE_CELLS).tolist()


def _too_long(key: str, cells: int, limit: int, what: str) -> str:
    return (f"LCSTooLarge: {key} not computed: {what} {cells:,} exceeds the exact path's limit "
            f"of {limit:,} (see the card's long-input rule)")


def _score_long_pair(
    target: str, prediction: str, types: list[str], engine: Callable[..., Any],
    tokenize: Callable[[str], list[str]],
) -> tuple[dict[str, float], dict[str, str]]:
    """All requested types of one long pair: n-gram types (and LCS types whose tables are
    small after all) by the engine, the other LCS types by ``judge_metrics.lcs``; per type the
    F-measure or a reason why it was not computed."""
    values: dict[str, float] = {}
    errors: dict[str, str] = {}
    to_engine = [key for key in types if key not in LCS_TYPES]
    lsum_hits = None  # rougeLsum's hits, when both texts are one sentence
    if "rougeLsum" in types:
        refs = [tokenize(s) for s in target.split("\n") if s]
        cans = [tokenize(s) for s in prediction.split("\n") if s]
        m, n = sum(map(len, refs)), sum(map(len, cans))
        steps = m * len(cans) + n * len(refs) + 64 * len(refs) * len(cans)
        if m * n > MAX_LCS_CELLS:
            errors["rougeLsum"] = _too_long("rougeLsum", m * n, MAX_LCS_CELLS, "the tables of")
        elif max(map(len, refs), default=0) * max(map(len, cans), default=0) <= TABLE_CELLS:
            to_engine.append("rougeLsum")
        elif steps > MAX_LSUM_STEPS:
            errors["rougeLsum"] = _too_long("rougeLsum", steps, MAX_LSUM_STEPS,
                                            "the sentence-pair walk of")
        else:
            hits = lcs.summary_lcs_hits(refs, cans)
            values["rougeLsum"] = lcs.fmeasure(hits / n, hits / m)
            if len(refs) == len(cans) == 1:
                lsum_hits = (refs[0], cans[0], hits)
    if "rougeL" in types:
        ref, can = tokenize(target), tokenize(prediction)
        cells = len(ref) * len(can)
        if cells <= TABLE_CELLS:
            to_engine.append("rougeL")
        elif cells > MAX_LCS_CELLS:
            errors["rougeL"] = _too_long("rougeL", cells, MAX_LCS_CELLS, "the table of")
        else:
            # one sentence each: the union LCS is one LCS, its length is rougeL's
            same = lsum_hits is not None and lsum_hits[0] == ref and lsum_hits[1] == can
            hits = lsum_hits[2] if same else lcs.lcs_length(ref, can)
            values["rougeL"] = lcs.fmeasure(hits / len(can), hits / len(ref))
    if to_engine:
        scores = engine(tuple(to_engine)).score(target, prediction)
        values.update((key, scores[key].fmeasure) for key in to_engine)
    return values, errors


def _rouge_types(name: str, rouge_types: Any) -> list[str]:
    if rouge_types is None:
        return list(DEFAULT_TYPES)
    if isinstance(rouge_types, str):
        rouge_types = [rouge_types]
    items = validation.as_list(name, rouge_types)
    if not items:
        raise ValueError(f"{name} is empty")
    for i, item in enumerate(items):
        if item not in VALID_TYPES:
            raise ValueError(
                f"{name}[{i}] is {item!r}; valid: rouge1 ... rouge9, rougeL, rougeLsum"
            )
    return list(dict.fromkeys(items))


def _tokenizer(name: str, tokenizer: Any) -> Any:
    if tokenizer is None or hasattr(tokenizer, "tokenize"):
        return tokenizer
    if not callable(tokenizer):
        raise TypeError(
            f"{name} must be a function str -> list[str] or an object with .tokenize, "
            f"got {type(tokenizer).__name__}"
        )
    return _CallableTokenizer(tokenizer)


class Rouge(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION,
                  ("https://en.wikipedia.org/wiki/ROUGE_(metric)",),
                  codebase_urls=(
                      "https://github.com/google-research/google-research/tree/master/rouge",
                      "https://github.com/SyntaxSpirits/rougers",
                  ))
    INPUTS = (Input("predictions", allow_empty=True), Input("references", kind="texts"))
    OPTIONS = (
        Option("rouge_types", list, DEFAULT_TYPES, check=_rouge_types, type_doc="list of str",
               doc='any of "rouge1" ... "rouge9", "rougeL", "rougeLsum"'),
        Option("use_aggregator", bool, True,
               doc="return the mean over samples per type (True) or the list of per-sample "
               "values (False)"),
        Option("use_stemmer", bool, False, doc="Porter-stem tokens longer than 3 characters"),
        Option("tokenizer", object, None, check=_tokenizer,
               type_doc="callable or object with .tokenize",
               doc="replaces rouge_score's default tokenizer (lowercase, keep [a-z0-9] runs), e.g. "
               "str.split, or a function for non-Latin text"),
    )
    HEADLINE = ("rouge1", "rouge2", "rougeL", "rougeLsum")
    DECISION_THRESHOLD = None  # agree: overlap has no natural cut
    EXAMPLE = Example({
        "predictions": ["The cat sat on the mat.", "A quick brown fox jumps over the dog."],
        "references": ["The cat is sitting on the mat.",
                       "The quick brown fox jumps over the lazy dog."],
    })

    def _compute(
        self,
        predictions: list[str],
        references: list[list[str]],
        rouge_types: list[str] | None = None,
        use_aggregator: bool = True,
        use_stemmer: bool = False,
        tokenizer: Any = None,
    ) -> dict[str, Any]:
        types = rouge_types
        scorers: dict[tuple[str, ...], Any] = {}

        def engine(keys: tuple[str, ...]) -> Any:
            if keys not in scorers:
                scorers[keys] = _scorer(list(keys), use_stemmer, tokenizer)
            return scorers[keys]

        n = len(references)
        sizes = np.fromiter(map(len, references), dtype=np.intp, count=n)
        if sizes.max() == 1:
            targets = [refs[0] for refs in references]
            paired = predictions
        else:
            targets = [t for refs in references for t in refs]
            paired = [p for p, k in zip(predictions, sizes.tolist(), strict=True) for _ in range(k)]
        with text.paused_gc():
            long: list[int] = []
            if any(key in LCS_TYPES for key in types):
                tokenize = tokenizer.tokenize if tokenizer else _default_tokenize(use_stemmer)
                long = _long_pairs(targets, paired, tokenize, tokenizer is None)
            errors: dict[int, dict[str, str]] = {}
            if long:
                skip = set(long)
                keep = [k for k in range(len(targets)) if k not in skip]
                pair_scores: list[dict[str, float]] = [{}] * len(targets)
                kept_scores = _fmeasures(engine(tuple(types)), [targets[k] for k in keep],
                                         [paired[k] for k in keep])
                for k, row in zip(keep, kept_scores, strict=True):
                    pair_scores[k] = row
                for k in long:
                    values, errors[k] = _score_long_pair(targets[k], paired[k], types, engine,
                                                         tokenize)
                    pair_scores[k] = {key: values.get(key, np.nan) for key in types}
            else:
                pair_scores = _fmeasures(engine(tuple(types)), targets, paired)
            scores = pair_scores if len(pair_scores) == n else _best_reference(pair_scores, sizes,
                                                                               types)
            unmeasured: list[dict[str, Any]] = []
            if any(errors.values()):
                sample_of = np.repeat(np.arange(n), sizes)
                unmeasured = [
                    {"index": int(sample_of[k]), "rouge_type": key, "reason": errors[k][key]}
                    for k in long for key in types if key in errors[k]
                ]
            result: dict[str, Any] = {}
            for key in types:
                values = np.fromiter(map(itemgetter(key), scores), dtype=np.float64, count=n)
                measured = values[~np.isnan(values)]
                result[key] = float(measured.mean()) if measured.size else None
            if unmeasured:  # NaN: not computed
                scores = [{k: None if v != v else v for k, v in row.items()} for row in scores]
            if not use_aggregator:
                result.update((key, [row[key] for row in scores]) for key in types)
            result["scores"] = scores
            if unmeasured:
                result["unmeasured"] = unmeasured
        per_sample = ["scores", *([] if use_aggregator else types)]
        return with_results(result, lambda: _results(result["scores"], unmeasured), per_sample)


def _results(scores: list[dict[str, float | None]], unmeasured: list[dict[str, Any]]
             ) -> list[SampleResult]:
    """Per sample its F-measures by type; a type not computed makes the sample unmeasured."""
    reasons: dict[int, str] = {}
    for entry in unmeasured:
        reasons[entry["index"]] = entry["reason"]
    return [SampleResult(next(iter(row.values())), {}, reasons.get(i), row)
            for i, row in enumerate(scores)]

